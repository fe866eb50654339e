/**
 * Lineage of appended rows (docs/loaded-tables.md "Lineage of appended rows"), end to end (simulator over HTTP →
 * runAttempt → real PostgreSQL): every row an append run loads carries its run key and one load time per run in
 * `_etl_run_key` and `_etl_loaded_at`, on every load plan and COPY format and for every output shape (typed rows,
 * lines, json and xml documents, archived files); an existing target gains the columns with its older rows NULL; and
 * revertAppendedRun removes exactly one run's rows.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePool } from '../src/app/connections.ts';
import { resolveJob } from '../src/config/load.ts';
import { getAttempt } from '../src/history/attempts.ts';
import { silentLogger } from '../src/logger.ts';
import { runAttempt, type AttemptOptions } from '../src/pipeline/run-attempt.ts';
import { normaliseColumnNames } from '../src/warehouse/identifiers.ts';
import { isLineageColumn } from '../src/warehouse/lineage.ts';
import { revertAppendedRun } from '../src/warehouse/revert.ts';
import { DATABASE_URL, uniqueName } from './support/env.ts';
import { columnTypes, jobEntry, loadedRows, servedRows, useHarness, type Harness } from './support/harness.ts';

const h = useHarness();
// One connection: every run reuses the session, so a run key set by an earlier transaction would show.
let single: pg.Pool;
beforeAll(() => {
  single = makePool(silentLogger, DATABASE_URL, 1);
});
afterAll(async () => {
  await single?.end();
});

const run = (
  config: ReturnType<Harness['config']>,
  job: string,
  request: AttemptOptions['request'] = {},
  pool: pg.Pool = h.pool,
) => runAttempt({ job: resolveJob(config, job), request, pool, redis: h.redis, logger: silentLogger });

/** Per run key (null for untagged rows): rows, distinct load times, and whether any row has a load time. */
async function lineageOf(table: string): Promise<Record<string, { n: number; times: number; stamped: number }>> {
  const { rows } = await h.pool.query<{ k: string | null; n: number; times: number; stamped: number }>(
    `SELECT _etl_run_key AS k, count(*)::int AS n, count(DISTINCT _etl_loaded_at)::int AS times, ` +
      `count(_etl_loaded_at)::int AS stamped FROM ${table} GROUP BY 1`,
  );
  return Object.fromEntries(rows.map((r) => [String(r.k), { n: r.n, times: r.times, stamped: r.stamped }]));
}

/** The load time of a run's rows lies within its attempt. */
async function expectLoadedWithin(table: string, runKey: string, attemptId: string): Promise<void> {
  const attempt = (await getAttempt(h.pool, attemptId))!;
  const { rows } = await h.pool.query<{ t: Date }>(
    `SELECT DISTINCT _etl_loaded_at AS t FROM ${table} WHERE _etl_run_key = $1`,
    [runKey],
  );
  expect(rows).toHaveLength(1);
  expect(rows[0]!.t.getTime()).toBeGreaterThanOrEqual(attempt.started_at.getTime());
  expect(rows[0]!.t.getTime()).toBeLessThanOrEqual(attempt.finished_at!.getTime());
}

it(
  'tags every appended row on the direct plan in text and binary format; ' +
    'an existing target gains the columns, its older rows NULL',
  async () => {
    const table = `${h.schema}.orders_direct`;
    const config = h.config({
      seed: jobEntry(
        { name: 'Sales/Orders', outputType: 'json', parameters: { ROWS: '50' } },
        { table, mode: 'replace' },
      ),
      small: jobEntry(
        { name: 'Sales/Orders', outputType: 'txt', parameters: { ROWS: '120' } },
        { table, mode: 'append' },
      ),
      // Enough rows for COPY binary format (BINARY_MIN_ROWS).
      big: jobEntry(
        { name: 'Sales/Orders', outputType: 'json', paging: 2500, parameters: { ROWS: '10000' } },
        { table, mode: 'append' },
      ),
    });
    await run(config, 'seed', {}, single);
    expect(Object.keys(await columnTypes(h.pool, table)).filter(isLineageColumn)).toEqual([]);

    const [k1, k2] = [uniqueName('small'), uniqueName('big')];
    const small = await run(config, 'small', { runKey: k1 }, single);
    expect(small).toMatchObject({ status: 'succeeded', plan: 'direct', format: 'csv', rows: 120 });
    const big = await run(config, 'big', { runKey: k2 }, single);
    expect(big).toMatchObject({ status: 'succeeded', plan: 'direct', format: 'binary', rows: 10000 });

    expect(await columnTypes(h.pool, table)).toMatchObject({
      _etl_run_key: 'text',
      _etl_loaded_at: 'timestamp with time zone',
      auftrag_nr: 'bigint',
    });
    expect(await lineageOf(table)).toEqual({
      null: { n: 50, times: 0, stamped: 0 },
      [k1]: { n: 120, times: 1, stamped: 120 },
      [k2]: { n: 10000, times: 1, stamped: 10000 },
    });
    await expectLoadedWithin(table, k1, small.attemptId);
    await expectLoadedWithin(table, k2, big.attemptId);
    // The report's values are untouched by the two extra columns.
    const { rows } = await h.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${table} WHERE _etl_run_key = $1 AND auftrag_nr IS NOT NULL`,
      [k2],
    );
    expect(rows[0]!.n).toBe(10000);

    // A replace into the table on the same session: its rows belong to no append run (NULL, not the '' a spent
    // transaction-local setting reads as).
    await run(config, 'seed', {}, single);
    expect(await lineageOf(table)).toMatchObject({ null: { n: 50, stamped: 50 } });
  },
);

it(
  'tags the rows of a new target (inference staging) and of a report ' +
    'that brings new columns, and one revert removes exactly one run',
  async () => {
    const table = `${h.schema}.stock_staging`;
    const config = h.config({
      stock: jobEntry({ name: 'Stock/Levels', outputType: 'xml_query', paging: 10 }, { table, mode: 'append' }),
      orders: jobEntry(
        { name: 'Sales/Orders', outputType: 'json', parameters: { ROWS: '30' } },
        { table, mode: 'append' },
      ),
    });
    const [k1, k2, k3] = [uniqueName('new'), uniqueName('same'), uniqueName('wider')];
    const first = await run(config, 'stock', { runKey: k1 });
    expect(first).toMatchObject({ status: 'succeeded', plan: 'inference-staging' });
    const second = await run(config, 'stock', { runKey: k2 });
    expect(second).toMatchObject({ status: 'succeeded', plan: 'direct', format: 'text' });
    const wider = await run(config, 'orders', { runKey: k3 });
    expect(wider).toMatchObject({ status: 'succeeded', plan: 'inference-staging', rows: 30 });
    const stockRows = first.rows;
    expect(await lineageOf(table)).toEqual({
      [k1]: { n: stockRows, times: 1, stamped: stockRows },
      [k2]: { n: stockRows, times: 1, stamped: stockRows },
      [k3]: { n: 30, times: 1, stamped: 30 },
    });
    await expectLoadedWithin(table, k1, first.attemptId);
    await expectLoadedWithin(table, k3, wider.attemptId);

    const reverted = await revertAppendedRun(h.pool, 'stock', k2, 'tester@here');
    expect(reverted).toMatchObject({
      kind: 'reverted',
      rows: stockRows,
      claim: { attempt_id: second.attemptId, target_table: table },
    });
    expect(await lineageOf(table)).toEqual({
      [k1]: { n: stockRows, times: 1, stamped: stockRows },
      [k3]: { n: 30, times: 1, stamped: 30 },
    });
  },
);

it(
  'refuses to load into a target whose lineage column has another type, ' +
    'naming it, and leaves the target as it was',
  async () => {
    const table = `${h.schema}.taken`;
    await h.pool.query(
      `CREATE TABLE ${table} (artikel text, lager text, bestand bigint, stand timestamptz, _etl_run_key integer)`,
    );
    await h.pool.query(`INSERT INTO ${table} (artikel, _etl_run_key) VALUES ('x', 7)`);
    const config = h.config({
      stock: jobEntry({ name: 'Stock/Levels', outputType: 'json' }, { table, mode: 'append' }),
    });
    await expect(run(config, 'stock', { runKey: uniqueName('taken') })).rejects.toMatchObject({
      code: 'TARGET_INVALID',
      message: expect.stringContaining('column _etl_run_key of'),
    });
    expect(await columnTypes(h.pool, table)).toEqual({
      artikel: 'text',
      lager: 'text',
      bestand: 'bigint',
      stand: 'timestamp with time zone',
      _etl_run_key: 'integer',
    });
    const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM ${table}`);
    expect(rows[0].n).toBe(1);
  },
);

it(
  'a statement planned once and run in two append transactions ' + "tags each row with its own transaction's run key",
  async () => {
    const table = `${h.schema}.planned_once`;
    await h.pool.query(`CREATE TABLE ${table} (n int, _etl_run_key text DEFAULT etl.load_run_key())`);
    const c = await single.connect();
    try {
      // A named statement's generic plan is made once and kept: a run key folded into it while planning would tag both.
      await c.query('SET plan_cache_mode = force_generic_plan');
      for (const [n, key] of [
        [1, 'first'],
        [2, 'second'],
      ] as const) {
        await c.query('BEGIN');
        await c.query(`SELECT set_config('report_etl.run_key', $1, true)`, [key]);
        await c.query({ name: 'planned_once', text: `INSERT INTO ${table} (n) VALUES ($1)`, values: [n] });
        await c.query('COMMIT');
      }
      await c.query('DEALLOCATE planned_once; RESET plan_cache_mode');
    } finally {
      c.release();
    }
    const { rows } = await h.pool.query(`SELECT n, _etl_run_key AS k FROM ${table} ORDER BY n`);
    expect(rows).toEqual([
      { n: 1, k: 'first' },
      { n: 2, k: 'second' },
    ]);
  },
);

it('no report column can be named like a lineage column: normalised names never start with _ and a letter', () => {
  expect(normaliseColumnNames(['_etl_run_key', '_ETL_LOADED_AT', '_1 etl'])).toEqual([
    'etl_run_key',
    'etl_loaded_at',
    '_1_etl',
  ]);
  // Clashing names too, however they are told apart.
  const names = normaliseColumnNames([
    '_etl_run_key',
    '__etl_run_key',
    ' _etl_loaded_at',
    '_etl_loaded_at',
    '"_etl_run_key"',
    '',
    '_',
  ]);
  for (const n of names) {
    expect(n, n).toMatch(/^([a-z]|_[0-9])/);
    expect(isLineageColumn(n), n).toBe(false);
  }
});

describe.each([
  ['txt_all', 'lines'],
  ['json_userdef', 'json documents'],
  ['xml', 'xml documents'],
  ['pdf', 'archived files'],
] as const)('%s (%s)', (outputType, _shape) => {
  it("appended twice: each run's rows carry its key, and a revert removes exactly one run's", async () => {
    const table = `${h.schema}.${outputType}_append`;
    const config = h.config({
      j: jobEntry(
        { name: 'Sales/Orders', outputType, paging: 20, parameters: { ROWS: '50' } },
        { table, mode: 'append' },
      ),
    });
    const [k1, k2] = [uniqueName('one'), uniqueName('two')];
    const a = await run(config, 'j', { runKey: k1 });
    const b = await run(config, 'j', { runKey: k2 });
    expect([a.status, b.status]).toEqual(['succeeded', 'succeeded']);
    const perRun = outputType === 'txt_all' ? a.rows : 3;
    expect(await lineageOf(table)).toEqual({
      [k1]: { n: perRun, times: 1, stamped: perRun },
      [k2]: { n: perRun, times: 1, stamped: perRun },
    });
    const { rows: before } = await h.pool.query(
      `SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS m FROM ${table} t WHERE _etl_run_key = $1`,
      [k2],
    );

    expect(await revertAppendedRun(h.pool, 'j', k1)).toMatchObject({ kind: 'reverted', rows: perRun });
    expect(await lineageOf(table)).toEqual({ [k2]: { n: perRun, times: 1, stamped: perRun } });
    const { rows: after } = await h.pool.query(
      `SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS m FROM ${table} t`,
    );
    expect(after[0].m).toBe(before[0].m);
  });
});

it('the typed rows of a direct append are the served rows, value for value', async () => {
  const table = `${h.schema}.orders_values`;
  const params = { ROWS: '300' };
  const config = h.config({
    j: jobEntry(
      { name: 'Sales/Orders', outputType: 'txt', paging: 100, parameters: params },
      { table, mode: 'append' },
    ),
  });
  await run(config, 'j', { runKey: uniqueName('v1') });
  const k2 = uniqueName('v2');
  await run(config, 'j', { runKey: k2 });
  expect(await revertAppendedRun(h.pool, 'j', k2)).toMatchObject({ kind: 'reverted', rows: 300 });
  expect(await loadedRows(h.pool, table, 'Sales/Orders.avw', params)).toEqual(
    servedRows('Sales/Orders.avw', params, 1),
  );
});

it(
  'schemaChanges: freeze lets an append target gain and keep its lineage columns: ' +
    "they are report-etl's, not the report's",
  async () => {
    const table = `${h.schema}.frozen`;
    const config = h.config({
      seed: jobEntry({ name: 'Stock/Levels', outputType: 'json' }, { table, mode: 'replace' }),
      frozen: jobEntry(
        { name: 'Stock/Levels', outputType: 'json' },
        { table, mode: 'append', schemaChanges: 'freeze' },
      ),
    });
    await run(config, 'seed');
    const [k1, k2] = [uniqueName('f1'), uniqueName('f2')];
    expect(await run(config, 'frozen', { runKey: k1 })).toMatchObject({ status: 'succeeded', plan: 'direct' });
    expect(await run(config, 'frozen', { runKey: k2 })).toMatchObject({ status: 'succeeded', plan: 'direct' });
    const lineage = await lineageOf(table);
    expect([lineage[k1]?.times, lineage[k2]?.times, lineage.null?.stamped]).toEqual([1, 1, 0]);
  },
);
