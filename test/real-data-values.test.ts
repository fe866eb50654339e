/**
 * Values that reach a table as sent (docs/loaded-tables.md "Values that would change"): JSON true/false into text,
 * boolean and number columns, in text and binary COPY; and errors that name the page and the row in one form,
 * `page P, row R of the page (row N of the run)`, whether the decoder found the value, or PostgreSQL did in COPY — also
 * when txt rows before it hold line breaks inside quoted values (COPY counts those as lines).
 */
import { describe, expect, it } from 'vitest';
import { USERDEF_ROWS_POINTER } from '../src/simulator/render-userdef.ts';
import type { ExtraReport } from '../src/simulator/index.ts';
import { CopyLines } from '../src/pages/copy-lines.ts';
import { ValueFit } from '../src/warehouse/value-fit.ts';
import { attemptFailure, jobEntry, useHarness } from './support/harness.ts';

const FLAG_ROWS = 12_000;
const flags: ExtraReport = {
  path: 'Test/Flags.avw',
  columns: [
    { name: 'Nr', kind: 'integer' },
    { name: 'Flag', kind: 'boolean' },
    { name: 'Other', kind: 'boolean' },
  ],
  rows: Array.from({ length: FLAG_ROWS }, (_, i) => [
    String(i + 1),
    i % 2 === 0 ? 'false' : 'true',
    i % 3 === 0 ? null : i % 3 === 1 ? 'true' : 'false',
  ]),
};

/** 1-based row of the run that holds the bad value: page 4, row 7 of the page at paging 20. */
const BAD_ROW = 67;
/** Rows whose name holds line breaks (row → breaks), on pages 1 to 4, before the bad row and one after it. */
const BREAKS = new Map([
  [3, 1],
  [10, 2],
  [25, 1],
  [44, 3],
  [60, 1],
  [BAD_ROW, 1],
  [80, 2],
]);
const mixed: ExtraReport = {
  path: 'Test/Mixed.avw',
  columns: [
    { name: 'Nr', kind: 'integer' },
    { name: 'Name', kind: 'text' },
    { name: 'Code', kind: 'text' },
    { name: 'Day', kind: 'text' },
  ],
  rows: Array.from({ length: 90 }, (_, i) => {
    const row = i + 1;
    const name = `Name ${row}${'\nweiter, "zitiert"'.repeat(BREAKS.get(row) ?? 0)}`;
    return [
      String(row),
      name,
      row === BAD_ROW ? '0815' : String(1000 + row),
      row === BAD_ROW ? 'kein Tag' : '2024-03-01',
    ];
  }),
};

/** Hourly local times without offset from 2010-03-27 00:00: row 27 is 02:00 on the day Europe/Zurich skips it. */
const clock: ExtraReport = {
  path: 'Test/Clock.avw',
  columns: [
    { name: 'Nr', kind: 'integer' },
    { name: 'At', kind: 'text' },
  ],
  rows: Array.from({ length: FLAG_ROWS }, (_, i) => [
    String(i + 1),
    new Date(Date.UTC(2010, 2, 27, i)).toISOString().slice(0, 19),
  ]),
};
const SKIPPED_ROW = 27;

const h = useHarness({ reports: [flags, mixed, clock] });
const ALL_TYPES = ['json', 'json_compact', 'json_userdef', 'txt', 'txt_cstr', 'xml_query'] as const;
type RowType = (typeof ALL_TYPES)[number];
let n = 0;

async function run(path: string, outputType: RowType, table: string, rows: number, paging = 5000) {
  const config = h.config({
    j: jobEntry(
      { name: path, outputType, paging, parameters: { ROWS: String(rows) } },
      { table, ...(outputType === 'json_userdef' ? { rowsAt: USERDEF_ROWS_POINTER } : {}) },
    ),
  });
  return h.run(config, 'j');
}

async function snapshot(table: string): Promise<string> {
  const { rows } = await h.pool.query(
    `SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS m, count(*)::int AS n FROM ${table} t`,
  );
  return `${rows[0].n}:${rows[0].m}`;
}

describe('JSON true and false', () => {
  // 40 rows: text COPY; 12,000 rows: binary COPY (at least 10,000 rows into a target that exists).
  for (const rows of [40, FLAG_ROWS]) {
    for (const outputType of ALL_TYPES) {
      it(`arrive as sent in a text column, as booleans in a boolean one: ${outputType}, ${rows}`, async () => {
        const table = `${h.schema}.flags_${++n}`;
        await h.pool.query(`CREATE TABLE ${table} (nr bigint, flag text, other boolean)`);
        await run(flags.path, outputType, table, rows);
        const { rows: got } = await h.pool.query<{ nr: string; flag: string; other: string | null }>(
          `SELECT nr::text AS nr, flag, other::text AS other FROM ${table} ORDER BY ${table}.nr`,
        );
        const want = flags.rows.slice(0, rows).map((r) => ({ nr: r[0], flag: r[1], other: r[2] ?? null }));
        // The first row that differs (a diff of 12,000 rows would drown it), then the count.
        const differs = want.findIndex((w, k) => JSON.stringify(got[k]) !== JSON.stringify(w));
        expect(differs < 0 ? undefined : { got: got[differs], want: want[differs] }).toBeUndefined();
        expect(got).toHaveLength(rows);
      });
    }
  }

  for (const [type, rows] of [
    ['bigint', 40],
    ['bigint', FLAG_ROWS],
    ['numeric(10,2)', 40],
    ['double precision', 40],
    ['numeric', FLAG_ROWS],
  ] as const) {
    for (const outputType of ['json', 'json_compact', 'json_userdef'] as const) {
      it(`fail into a ${type} column, naming the value, the table untouched: ${outputType}, ${rows}`, async () => {
        const table = `${h.schema}.flags_${++n}`;
        await h.pool.query(`CREATE TABLE ${table} (nr bigint, flag ${type}, other boolean)`);
        await h.pool.query(`INSERT INTO ${table} VALUES (1, 1, true)`);
        const before = await snapshot(table);
        const err = await attemptFailure(run(flags.path, outputType, table, rows));
        expect(err.code).toBe('VALUE_DOES_NOT_FIT');
        expect(err.message).toMatch(
          /^value "false" does not fit column flag \(report column "Flag"\) of type .* page 1, row 1 of the page /,
        );
        expect(err.message).toContain('page 1, row 1 of the page (row 1 of the run)');
        expect(await snapshot(table)).toBe(before);
      });
    }
  }
});

describe('one form for the row of a value that does not fit', () => {
  for (const outputType of ALL_TYPES) {
    it(`found by the decoder: a code "0815" into bigint, page 4 of paging 20: ${outputType}`, async () => {
      const table = `${h.schema}.mixed_${++n}`;
      await h.pool.query(`CREATE TABLE ${table} (nr bigint, name text, code bigint, day text)`);
      const err = await attemptFailure(run(mixed.path, outputType, table, 90, 20));
      expect(err.code).toBe('VALUE_DOES_NOT_FIT');
      expect(err.message).toMatch(
        /^value "0815" does not fit column code \(report column "Code"\) of type bigint in \S+, page 4, /,
      );
      expect(err.message).toContain('page 4, row 7 of the page (row 67 of the run): it is text');
      expect((err.error as unknown as { details: Record<string, unknown> }).details).toMatchObject({
        page: 4,
        rowOfPage: 7,
        row: 67,
      });
    });

    it(`found by PostgreSQL in COPY after rows holding line breaks: "kein Tag" into date: ${outputType}`, async () => {
      const table = `${h.schema}.mixed_${++n}`;
      await h.pool.query(`CREATE TABLE ${table} (nr bigint, name text, code text, day date)`);
      await h.pool.query(`INSERT INTO ${table} VALUES (1, 'old', '0001', '2020-01-01')`);
      const before = await snapshot(table);
      const err = await attemptFailure(run(mixed.path, outputType, table, 90, 20));
      expect(err.code).toBe('VALUE_DOES_NOT_FIT');
      expect(err.message).toMatch(
        /^value "kein Tag" does not fit column day \(report column "Day"\) of type date in \S+, page 4, row 7 of the /,
      );
      expect(err.message).toContain(
        'page 4, row 7 of the page (row 67 of the run): invalid input syntax for type date',
      );
      expect(await snapshot(table)).toBe(before);
    });
  }

  it('maps every line COPY counts to its row', () => {
    const lines = new CopyLines();
    const expected: number[] = [];
    for (let row = 1; row <= 90; row++) {
      const breaks = BREAKS.get(row) ?? 0;
      if (breaks) lines.note(row, breaks);
      for (let k = 0; k <= breaks; k++) expected.push(row);
    }
    expect(expected.map((_, i) => lines.rowOfLine(i + 1))).toEqual(expected);
    expect(new CopyLines().rowOfLine(5)).toBe(5);
  });
});

describe("a local time that the connection's zone skips", () => {
  it('leaves a new column text, every value as sent, where timestamptz would move it an hour', async () => {
    expect(clock.rows[SKIPPED_ROW - 1]![1]).toBe('2010-03-28T02:00:00');
    for (const outputType of ALL_TYPES) {
      const table = `${h.schema}.clock_${++n}`;
      await run(clock.path, outputType, table, 40);
      const { rows } = await h.pool.query<{ at: string; type: string }>(
        `SELECT at, pg_typeof(at)::text AS type FROM ${table} ORDER BY nr`,
      );
      expect(rows.map((r) => r.at)).toEqual(clock.rows.slice(0, 40).map((r) => r[1]));
      expect(rows[0]!.type).toBe('text');
    }
  });

  for (const rows of [40, FLAG_ROWS]) {
    for (const outputType of ALL_TYPES) {
      it(`fails naming it when the column is timestamptz, the table untouched: ${outputType}, ${rows}`, async () => {
        const table = `${h.schema}.clock_${++n}`;
        await h.pool.query(`CREATE TABLE ${table} (nr bigint, at timestamptz)`);
        await h.pool.query(`INSERT INTO ${table} VALUES (1, '2010-01-01T00:00:00Z')`);
        const before = await snapshot(table);
        const err = await attemptFailure(run(clock.path, outputType, table, rows));
        expect(err.code).toBe('VALUE_DOES_NOT_FIT');
        expect(err.message).toMatch(
          /^value "2010-03-28T02:00:00" does not fit column at \(report column "At"\) of type timestamp with /,
        );
        expect(err.message).toContain(
          'page 1, row 27 of the page (row 27 of the run): it is a local time that Europe/Zurich skips',
        );
        expect(await snapshot(table)).toBe(before);
      });
    }
  }

  it('is told from the bytes of every form a time without offset takes, and only of those', () => {
    const fit = new ValueFit(
      ['timestamp with time zone'],
      (change) => {
        throw new Error(change.problem);
      },
      'Europe/Zurich',
    );
    const skipped = (v: string): boolean => {
      const b = Buffer.from(v);
      try {
        fit.check(0, b, 0, b.length, true, 1, 1);
        return false;
      } catch {
        return true;
      }
    };
    const cases: [string, boolean][] = [
      ['2010-03-28T02:00:00', true],
      ['2010-03-28 02:30', true],
      ['2010-03-28t02:59:59.999999', true],
      ['28.03.2010 02:15:00.000', true],
      ['2010-03-28T01:59:59', false],
      ['2010-03-28T03:00:00', false],
      ['2010-10-31T02:30:00', false],
      ['2010-03-28T02:30:00+01:00', false],
      ['2010-03-28T02:30:00Z', false],
      ['0050-03-28T02:30:00', false],
      ['2010-03-28', false],
      ['2010-03-28T25:30:00', false],
    ];
    expect(cases.map(([v]) => [v, skipped(v)])).toEqual(cases);
  });

  it('takes the hours before it into timestamptz, each as sent', async () => {
    const table = `${h.schema}.clock_${++n}`;
    await h.pool.query(`CREATE TABLE ${table} (nr bigint, at timestamptz)`);
    await run(clock.path, 'json', table, SKIPPED_ROW - 1);
    const { rows } = await h.pool.query<{ at: string }>(
      `SELECT to_char(at AT TIME ZONE 'Europe/Zurich', 'YYYY-MM-DD"T"HH24:MI:SS') AS at FROM ${table} ORDER BY nr`,
    );
    expect(rows.map((r) => r.at)).toEqual(clock.rows.slice(0, SKIPPED_ROW - 1).map((r) => r[1]));
  });
});
