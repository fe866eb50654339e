/**
 * Column names depend on the report column's own name, never on the order (docs/loaded-tables.md "Column names"): two
 * reports whose clashing columns `Amount` and `amount` come in opposite orders load each value into the same column of
 * one table, and a load into an existing table maps the report's columns by the original names recorded with it — also
 * for a table loaded before names were recorded. Real runs: simulator over HTTP, real PostgreSQL.
 */
import { createHash } from 'node:crypto';
import { expect, it } from 'vitest';
import { resolveJob } from '../src/config/load.ts';
import { silentLogger } from '../src/logger.ts';
import { runAttempt } from '../src/pipeline/run-attempt.ts';
import { isLineageColumn } from '../src/warehouse/lineage.ts';
import { columnTypes, jobEntry, useHarness } from './support/harness.ts';

const h = useHarness();

const suffixed = `amount_${createHash('sha256').update('Amount').digest('hex').slice(0, 6)}`;

const load = (table: string, report: string, outputType: string, mode = 'append') =>
  runAttempt({
    job: resolveJob(
      h.config({ j: jobEntry({ name: report, outputType, parameters: { ROWS: '5' } }, { table, mode }) }),
      'j',
    ),
    pool: h.pool,
    redis: h.redis,
    logger: silentLogger,
  });

/**
 * The target's columns in order, without the lineage columns every append target has (docs/loaded-tables.md "Lineage
 * of appended rows").
 */
async function targetColumns(table: string): Promise<string[]> {
  return Object.keys(await columnTypes(h.pool, table)).filter((c) => !isLineageColumn(c));
}

/** (nr, the column holding 100 + nr, the column holding nr) of every row: "Amount" holds 100 + n, "amount" holds n. */
async function pairs(table: string, upper: string, lower: string): Promise<string[]> {
  const { rows } = await h.pool.query(`SELECT nr, "${upper}" AS u, "${lower}" AS l FROM ${table} ORDER BY nr, u`);
  return rows.map((r) => `${r.nr}:${r.u}:${r.l}`);
}

it.each(['json', 'txt', 'xml_query'])(
  '%s: reports with the clashing columns in opposite orders load each value into the same column',
  async (outputType) => {
    const table = `${h.schema}.clash_${outputType}`;
    await load(table, 'Clash/Amounts', outputType);
    expect(await targetColumns(table)).toEqual(['nr', suffixed, 'amount']);
    await load(table, 'Clash/Amounts Reversed', outputType);
    // The second load went into the same columns (none added), each value by its column's original name.
    expect(await targetColumns(table)).toEqual(['nr', suffixed, 'amount']);
    const expected = [1, 2, 3, 4, 5].flatMap((n) => [`${n}:${100 + n}:${n}`, `${n}:${100 + n}:${n}`]);
    expect(await pairs(table, suffixed, 'amount')).toEqual(expected);

    // A new table made from the reversed report gets the same names.
    const other = `${h.schema}.clash_rev_${outputType}`;
    await load(other, 'Clash/Amounts Reversed', outputType);
    expect((await targetColumns(other)).sort()).toEqual(['amount', 'nr', suffixed].sort());
    expect(await pairs(other, suffixed, 'amount')).toEqual([1, 2, 3, 4, 5].map((n) => `${n}:${100 + n}:${n}`));
    const { rows } = await h.pool.query(
      'SELECT report_column, column_name FROM etl.target_columns WHERE target_table = $1 ORDER BY report_column',
      [other],
    );
    expect(rows).toEqual([
      { report_column: 'Amount', column_name: suffixed },
      { report_column: 'Nr', column_name: 'nr' },
      { report_column: 'amount', column_name: 'amount' },
    ]);
  },
);

it(
  'a table loaded before names were recorded keeps its columns as they were made, ' +
    'and is mapped by name from then on',
  async () => {
    const table = `${h.schema}.clash_legacy`;
    // As the earlier version made it from Clash/Amounts: clashes numbered in order of appearance.
    await h.pool.query(`CREATE TABLE ${table} (nr bigint, amount bigint, amount_2 bigint)`);
    await h.pool.query(`INSERT INTO ${table} VALUES (0, 100, 0)`);
    await load(table, 'Clash/Amounts', 'json');
    expect(await targetColumns(table)).toEqual(['nr', 'amount', 'amount_2']);
    // Now recorded: the reversed report maps by name, not by the order it sends.
    await load(table, 'Clash/Amounts Reversed', 'json');
    expect(await targetColumns(table)).toEqual(['nr', 'amount', 'amount_2']);
    const expected = ['0:100:0', ...[1, 2, 3, 4, 5].flatMap((n) => [`${n}:${100 + n}:${n}`, `${n}:${100 + n}:${n}`])];
    expect(await pairs(table, 'amount', 'amount_2')).toEqual(expected);
  },
);

it('a replace into a dropped and re-created table of the same name forgets the old records', async () => {
  const table = `${h.schema}.clash_recreated`;
  await load(table, 'Clash/Amounts', 'json', 'replace');
  await h.pool.query(`DROP TABLE ${table}`);
  await load(table, 'Stock/Levels', 'json', 'replace');
  const { rows } = await h.pool.query(
    'SELECT report_column FROM etl.target_columns WHERE target_table = $1 ORDER BY 1',
    [table],
  );
  expect(rows.map((r) => r.report_column)).toEqual(['Artikel', 'Bestand', 'Lager', 'Stand']);
});

it('report columns named like PostgreSQL system columns load into the name with a trailing _', async () => {
  const table = `${h.schema}.system_names`;
  await load(table, 'Clash/System Columns', 'json', 'replace');
  expect(await targetColumns(table)).toEqual(['nr', 'xmin_', 'ctid_', 'tableoid_', 'cmin_', 'cmax_', 'xmax_']);
  const { rows } = await h.pool.query(`SELECT nr, xmin_, ctid_, xmax_ FROM ${table} ORDER BY nr LIMIT 2`);
  expect(rows).toEqual([
    { nr: '1', xmin_: '10', ctid_: '20', xmax_: '60' },
    { nr: '2', xmin_: '11', ctid_: '21', xmax_: '61' },
  ]);
});
