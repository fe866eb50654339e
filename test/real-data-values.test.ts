/**
 * Values that reach a table as sent (docs/loaded-tables.md "Values that would change"): JSON true/false into text,
 * boolean and number columns, in text and binary COPY.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../src/logger.ts';
import { resolveJob } from '../src/config/load.ts';
import { AttemptFailedError, runAttempt } from '../src/pipeline/run-attempt.ts';
import { USERDEF_ROWS_POINTER } from '../src/simulator/render-userdef.ts';
import type { ExtraReport } from '../src/simulator/index.ts';
import { jobEntry, useHarness } from './support/harness.ts';

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

const h = useHarness({ reports: [flags] });
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
  return runAttempt({ job: resolveJob(config, 'j'), pool: h.pool, redis: h.redis, logger: silentLogger });
}

async function failure(p: Promise<unknown>): Promise<AttemptFailedError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AttemptFailedError);
  return err as AttemptFailedError;
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
      it(`arrive as sent in an existing text column, and as booleans in a boolean one: ${outputType}, ${rows}`, async () => {
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
        const err = await failure(run(flags.path, outputType, table, rows));
        expect(err.code).toBe('VALUE_DOES_NOT_FIT');
        expect(err.message).toMatch(
          /^value "false" does not fit column flag \(report column "Flag"\) of type .* page 1, row 1 of the page/,
        );
        expect(await snapshot(table)).toBe(before);
      });
    }
  }
});
