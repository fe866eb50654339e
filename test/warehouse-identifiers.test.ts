/** Column name normalisation (docs/loaded-tables.md "Column names") and identifier quoting. */
import { createHash } from 'node:crypto';
import { expect, it } from 'vitest';
import { normaliseColumnName, normaliseColumnNames, parseTableName, quoteIdent } from '../src/warehouse/identifiers.ts';

it('normalises report column names to snake_case identifiers', () => {
  expect(normaliseColumnName('Menge Stk')).toBe('menge_stk');
  expect(normaliseColumnName('Größe (cm)')).toBe('groesse_cm');
  expect(normaliseColumnName('ÄÖÜ äöü ß')).toBe('aeoeue_aeoeue_ss');
  expect(normaliseColumnName('Rabatt %')).toBe('rabatt');
  expect(normaliseColumnName('1. Quartal')).toBe('_1_quartal');
  expect(normaliseColumnName('  --Beleg--ID--  ')).toBe('beleg_id');
  expect(normaliseColumnName('Café')).toBe('caf');
  expect(normaliseColumnName('€')).toBe('');
});

const sha6 = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 6);

it('keeps names distinct and within 63 bytes; a clash is suffixed from the original name, whatever the order', () => {
  expect(normaliseColumnNames(['Menge Stk', 'menge_stk', 'MENGE-STK', '€', '日本'])).toEqual([
    `menge_stk_${sha6('Menge Stk')}`,
    'menge_stk',
    `menge_stk_${sha6('MENGE-STK')}`,
    'column_4',
    'column_5',
  ]);
  const forward = normaliseColumnNames(['Nr', 'Amount', 'amount']);
  const reversed = normaliseColumnNames(['amount', 'Nr', 'Amount']);
  expect(forward).toEqual(['nr', `amount_${sha6('Amount')}`, 'amount']);
  expect(reversed).toEqual(['amount', 'nr', `amount_${sha6('Amount')}`]);
  // Without a name written exactly so, every clashing one is suffixed; the very same name twice is numbered.
  expect(normaliseColumnNames(['AMOUNT', 'Amount'])).toEqual([`amount_${sha6('AMOUNT')}`, `amount_${sha6('Amount')}`]);
  expect(normaliseColumnNames(['Betrag', 'Betrag'])).toEqual(['betrag', 'betrag_2']);
  const long = normaliseColumnNames(['x'.repeat(80) + 'a', 'x'.repeat(80) + 'b']);
  expect(long[0]).not.toBe(long[1]);
  for (const n of long) expect(Buffer.byteLength(n)).toBeLessThanOrEqual(63);
});

it('quotes identifiers so that nothing breaks out of them', () => {
  expect(quoteIdent('a"; DROP TABLE x; --')).toBe('"a""; DROP TABLE x; --"');
  expect(() => quoteIdent('a\0b')).toThrow(/NUL/);
});

it('accepts only plain schema.table names', () => {
  expect(parseTableName('erp.sales_orders')).toEqual({ schema: 'erp', table: 'sales_orders' });
  expect(parseTableName('orders')).toEqual({ schema: 'public', table: 'orders' });
  expect(() => parseTableName('erp.orders; DROP TABLE x')).toThrow(/not schema.table/);
  expect(() => parseTableName('a.b.c')).toThrow(/not schema.table/);
});
