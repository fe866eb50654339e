/**
 * Bytes that no PostgreSQL text takes, in a txt page (docs/loaded-tables.md "Values that cannot load"): invalid UTF-8
 * or a NUL byte fails the run with VALUE_DOES_NOT_FIT naming the target column, the report column, the page and the
 * row, whatever the load's plan and COPY format; the target stays as it was and the report job is deleted. The
 * simulator puts the byte into the first quoted value (column Kunde) of page 2's second row on request (SIM_FAULT,
 * simulator/page-faults.ts).
 */
import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { TxtPageDecoder } from '../src/pages/txt-decoder.ts';
import { firstUnfitByte, locateUnfitByte, textFits, unfitBytesError } from '../src/pages/unfit-bytes.ts';
import { UnfitBytesError } from '../src/warehouse/load-errors.ts';
import { decodeAll } from './pages-support.ts';
import { attemptFailure, type Harness, jobEntry, useHarness } from './support/harness.ts';

const h = useHarness();

/** A fingerprint of a table's full content ('absent' when there is none). */
async function snapshot(table: string): Promise<string> {
  const { rows: exists } = await h.pool.query('SELECT to_regclass($1) AS t', [table]);
  if (exists[0].t === null) return 'absent';
  const { rows } = await h.pool.query(
    `SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS m, count(*)::int AS n FROM ${table} t`,
  );
  return `${rows[0].n}:${rows[0].m}`;
}

let n = 0;

/**
 * Runs a txt job of `rows` rows at paging `paging` with `fault` on page 2, after a good load when `loadFirst`.
 * @returns the failure and its run_errors row
 */
async function fails(
  fault: 'invalid-utf8' | 'nul-byte',
  o: { loadFirst: boolean; rows?: number; paging?: number; target?: Record<string, unknown> },
) {
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
  const table = `${h.schema}.u${++n}`;
  const job = (parameters: Record<string, string>) =>
    h.config({
      j: jobEntry(
        {
          name: 'Sales/Orders',
          outputType: 'txt',
          paging: o.paging ?? 20,
          parameters: { ROWS: String(o.rows ?? 50), ...parameters },
        },
        { table, ...o.target },
      ),
    });
  const run = (config: ReturnType<Harness['config']>) => h.run(config, 'j', {}, { logger });
  if (o.loadFirst) await run(job({}));
  lines.length = 0;
  const before = await snapshot(table);
  const failed = await attemptFailure(run(job({ SIM_FAULT: fault, SIM_FAULT_PAGE: '2' })));
  expect(await snapshot(table)).toBe(before);
  const errors = (await h.pool.query('SELECT * FROM etl.run_errors WHERE attempt_id = $1', [failed.attemptId])).rows;
  expect(errors).toHaveLength(1);
  expect(errors[0]).toMatchObject({ stage: 'load', error_kind: 'VALUE_DOES_NOT_FIT', retryable: false });
  return { err: failed, error: errors[0], table, lines };
}

const NOT_UTF8 =
  'is not UTF-8, the only encoding PostgreSQL text takes here: the report sent the value in another encoding; ' +
  'correct it in the ERP, then replay the run';

describe('a txt value with bytes no PostgreSQL text takes', () => {
  it('invalid UTF-8 into a new table: column, report column, page and row named', async () => {
    const { err, error, table } = await fails('invalid-utf8', { loadFirst: false });
    expect(err.message).toMatch(
      new RegExp(
        `^value "\ufffd[^"]+" does not fit column kunde \\(report column "Kunde"\\) in ${table}, page 2, row 2 of ` +
          `the page \\(row 22 of the run\\): byte 0xff \\(byte 1 of the value, byte offset \\d+ of the page\\) ` +
          `${NOT_UTF8}$`,
      ),
    );
    expect(error.details).toMatchObject({ column: 'kunde', reportColumn: 'Kunde', page: 2, row: 22, rowOfPage: 2 });
  });

  it('a NUL byte into an existing table (COPY straight into it): named alike, the table as it was', async () => {
    const { err, error, table } = await fails('nul-byte', { loadFirst: true });
    expect(err.message).toMatch(
      new RegExp(
        `^value "\ufffd[^"]+" does not fit column kunde \\(report column "Kunde"\\) of type text in ${table}, ` +
          'page 2, row 2 of the page \\(row 22 of the run\\): it holds a NUL byte \\(byte 1 of the value, ' +
          'byte offset \\d+ of the page\\), ' +
          'which PostgreSQL text cannot hold: remove it from the value in the ERP, then replay the run$',
      ),
    );
    expect(error.details).toMatchObject({ column: 'kunde', page: 2, row: 22, byte: '0x00' });
  });

  it('invalid UTF-8 into a merge target, after binary COPY gave way to csv', async () => {
    const { err, error, lines } = await fails('invalid-utf8', {
      loadFirst: true,
      rows: 10_000,
      paging: 4_000,
      target: { mode: 'merge', key: ['auftrag_nr'] },
    });
    expect(err.message).toContain('does not fit column kunde (report column "Kunde") of type text in ');
    expect(err.message).toContain(', page 2, row 2 of the page (row 4002 of the run): byte 0xff');
    expect(error.details).toMatchObject({ column: 'kunde', page: 2, row: 4002, rowOfPage: 2 });
    const stopped = lines
      .map((l) => JSON.parse(l) as { msg: string; reason?: string })
      .filter((l) => /^binary COPY stopped/.test(l.msg));
    expect(stopped).toHaveLength(1);
    expect(stopped[0]!.reason).toContain('invalid byte sequence for encoding "UTF8": 0xff');
  });
});

describe('finding the byte', () => {
  const header = 'Nr,Name,Wert\n';
  const page = (rows: Buffer[]) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(header), ...rows]);
  const good = (k: number) => Buffer.from(`${k},"Zeile ""${k}""\nmit Umbruch, und Ä",${k}.5\n`);

  it.each([
    ['0xff', Buffer.from([0xff]), '0xff'],
    ['an overlong NUL (0xc0 0x80)', Buffer.from([0xc0, 0x80]), '0xc0'],
    ['a surrogate (0xed 0xa0 0x80)', Buffer.from([0xed, 0xa0, 0x80]), '0xed'],
    ['a cut sequence (0xe2 0x82)', Buffer.from([0xe2, 0x82]), '0xe2'],
    ['NUL', Buffer.from([0]), '0x00'],
  ])('%s in row 37 of page 2, any chunking: names column, page and row of the run', async (_, bad, hex) => {
    for (const size of [1, 7, 'random', 65_536] as const) {
      const decoder = new TxtPageDecoder();
      const rows = (from: number) => Array.from({ length: 40 }, (_, k) => good(from + k));
      const page2 = rows(41);
      page2[36] = Buffer.concat([Buffer.from('77,"Zeile\nmit '), bad, Buffer.from(' Fehler",1\n')]);
      const err = await decodeAll(decoder, [page(rows(1)), page(page2)], size).catch((e: unknown) => e);
      expect(err, String(size)).toBeInstanceOf(UnfitBytesError);
      const unfit = (err as UnfitBytesError).unfit;
      expect(unfit).toMatchObject({
        columnIndex: 1,
        reportColumn: 'Name',
        page: 2,
        row: 77,
        rowOfPage: 37,
        byteInValue: 11,
      });
      expect(`0x${unfit.byte.toString(16).padStart(2, '0')}`).toBe(hex);
      expect(unfit.value).toMatch(/^Zeile\nmit \ufffd/);
      expect((err as UnfitBytesError).code).toBe('VALUE_DOES_NOT_FIT');
    }
  });

  it('an unquoted value, and a long one shown cut', () => {
    const b = Buffer.concat([
      Buffer.from('1,"ok",2\n3,"'),
      Buffer.alloc(300, 'x'),
      Buffer.from([0xfe]),
      Buffer.from('",4\n'),
    ]);
    expect(locateUnfitByte(b, 0, b.length)).toMatchObject({ record: 1, field: 1, byte: 0xfe });
    const where = { page: 3, firstRow: 10, firstRowOfPage: 4, bufferOffset: 100, columns: ['A', 'B', 'C'] };
    const err = unfitBytesError(b, 0, b.length, where);
    expect(err!.unfit).toMatchObject({
      row: 11,
      rowOfPage: 5,
      reportColumn: 'B',
      byteInValue: 301,
      offset: 100 + 12 + 300,
    });
    expect(err!.unfit.value).toBe(`${'x'.repeat(80)}…`);
    const bare = Buffer.from([0x31, 0x2c, 0x32, 0xff, 0x0a]);
    expect(locateUnfitByte(bare, 0, bare.length)).toMatchObject({ record: 0, field: 1, at: 3, valueStart: 2 });
  });

  it('valid UTF-8 of every length, and empty lines, pass', () => {
    const b = Buffer.from('1,"aä€😀",2\n\n\r\n3,"",\n');
    expect(textFits(b, 0, b.length)).toBe(true);
    expect(firstUnfitByte(b, 0, b.length)).toBe(-1);
    expect(locateUnfitByte(b, 0, b.length)).toBeUndefined();
    const after = Buffer.concat([b, Buffer.from([0x35, 0x2c, 0xff, 0x0a])]);
    expect(locateUnfitByte(after, 0, after.length)).toMatchObject({ record: 2, field: 1 });
  });
});
