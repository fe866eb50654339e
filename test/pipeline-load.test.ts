/**
 * One run end to end (simulator over HTTP → runAttempt → real PostgreSQL): every output type loads the served rows
 * value for value with the right types; type drift after the first page; the write modes' contracts.
 */
import { describe, expect, it } from 'vitest';
import { reportData } from '../src/simulator/catalogue.ts';
import { getAttempt } from '../src/history/attempts.ts';
import { uniqueName } from './support/env.ts';
import { columnTypes, jobEntry, loadedRows, servedRows, useHarness } from './support/harness.ts';

const h = useHarness();

describe.each(['json', 'json_compact', 'txt', 'xml_query'] as const)('output type %s', (outputType) => {
  it('loads the served rows value for value, with inferred types, first into a new table and then again', async () => {
    const table = `${h.schema}.orders_${outputType}`;
    // Enough rows for binary format on the second run (BINARY_MIN_ROWS).
    const params = { ROWS: '12345' };
    const config = h.config({
      orders: jobEntry(
        { name: 'Sales/Orders', outputType, paging: 2500, parameters: params },
        { table, mode: 'replace' },
      ),
    });
    const first = await h.run(config, 'orders');
    expect(first).toMatchObject({ status: 'succeeded', plan: 'inference-staging', rows: 12345, pages: 5 });
    const expected = servedRows('Sales/Orders.avw', params, 1, outputType === 'xml_query');
    expect(await loadedRows(h.pool, table, 'Sales/Orders.avw', params)).toEqual(expected);
    const types = await columnTypes(h.pool, table);
    expect(types).toMatchObject({
      auftrag_nr: 'bigint',
      menge_stk: 'bigint',
      betrag: 'numeric',
      rabatt: 'numeric',
      erfasst_am: 'timestamp with time zone',
      beleg_id: 'bigint',
    });
    expect(types.kunde).toBe('text');
    expect(Object.keys(types)).toEqual([
      'auftrag_nr',
      'kunde',
      'menge_stk',
      'betrag',
      'rabatt',
      'erfasst_am',
      'bemerkung',
      'beleg_id',
    ]);
    // "0042" in Bemerkung stays text with its leading zeros.
    const { rows: z } = await h.pool.query(`SELECT count(*)::int AS n FROM ${table} WHERE bemerkung = '0042'`);
    expect(z[0].n).toBeGreaterThan(0);

    const second = await h.run(config, 'orders');
    // The target's types are known now: typed columns go in COPY binary format.
    expect(second).toMatchObject({ status: 'succeeded', plan: 'direct', rows: 12345, format: 'binary' });
    expect(await loadedRows(h.pool, table, 'Sales/Orders.avw', params)).toEqual(expected);
    const recorded = await getAttempt(h.pool, second.attemptId);
    expect(recorded).toMatchObject({
      status: 'succeeded',
      rows: '12345',
      pages: 5,
      job: 'orders',
      write_mode: 'replace',
      target_table: table,
    });
    expect(Number(recorded!.bytes)).toBe(second.bytes);
    expect(second.bytes).toBeGreaterThan(12345 * 50);
  });
});

it(
  'infers numeric for a column with integers on the first page and decimals on ' + 'later pages, on the first run',
  async () => {
    const table = `${h.schema}.drift`;
    const config = h.config({
      drift: jobEntry({ name: 'Drift', outputType: 'json', paging: 50, parameters: { ROWS: '200' } }, { table }),
    });
    await h.run(config, 'drift');
    expect(await columnTypes(h.pool, table)).toEqual({ nr: 'bigint', wert: 'numeric' });
    expect(await loadedRows(h.pool, table, 'Drift.avw', { ROWS: '200' })).toEqual(
      servedRows('Drift.avw', { ROWS: '200' }, 1),
    );
  },
);

it('declared column types win over inference', async () => {
  const table = `${h.schema}.declared`;
  const config = h.config({
    d: jobEntry(
      { name: 'Stock/Levels', outputType: 'txt' },
      { table, columns: { bestand: 'integer', stand: 'timestamp', artikel: 'varchar(80)' } },
    ),
  });
  await h.run(config, 'd');
  expect(await columnTypes(h.pool, table)).toEqual({
    artikel: 'character varying(80)',
    lager: 'text',
    bestand: 'integer',
    stand: 'timestamp without time zone',
  });
});

describe('write modes', () => {
  it('append adds each logical run once, however often it is retried or replayed', async () => {
    const table = `${h.schema}.ledger_append`;
    const params = { ROWS: '120' };
    const config = h.config({
      l: jobEntry(
        { name: 'Finance/Ledger.avx', outputType: 'xml_query', paging: 50, parameters: params },
        { table, mode: 'append' },
      ),
    });
    const [tick1, tick2] = [uniqueName('tick'), uniqueName('tick')];
    const a = await h.run(config, 'l', { runKey: tick1 });
    expect(a).toMatchObject({ status: 'succeeded', rows: 120 });
    const again = await h.run(config, 'l', { runKey: tick1, trigger: 'replay' });
    expect(again).toMatchObject({ status: 'already-loaded', rows: 0 });
    await h.run(config, 'l', { runKey: tick2 });
    const { rows } = await h.pool.query(
      `SELECT count(*)::int AS n, count(DISTINCT buchung_nr)::int AS d FROM ${table}`,
    );
    expect(rows[0]).toEqual({ n: 240, d: 120 });
    // Konto is digit-only text with leading zeros ("0100"): it must stay text in xml_query too.
    expect((await columnTypes(h.pool, table)).konto).toBe('text');
    const { rows: z } = await h.pool.query(`SELECT count(*)::int AS n FROM ${table} WHERE konto = '0100'`);
    expect(z[0].n).toBeGreaterThan(0);
  });

  it(
    'append stays exactly-once when two attempts of one run load at the same ' + 'time: the second adds nothing',
    async () => {
      const table = `${h.schema}.ledger_race`;
      const params = { ROWS: '400' };
      const config = h.config({
        l: jobEntry(
          { name: 'Finance/Ledger.avx', outputType: 'json', paging: 100, parameters: params },
          { table, mode: 'append' },
        ),
      });
      await h.run(config, 'l', { runKey: uniqueName('seed') });
      const runKey = uniqueName('race');
      // Both pass the early "already appended?" check; the target lock lets one commit, the other finds the claim.
      const results = await Promise.all([h.run(config, 'l', { runKey }), h.run(config, 'l', { runKey })]);
      expect(results.map((r) => r.status).sort()).toEqual(['already-loaded', 'succeeded']);
      const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM ${table}`);
      expect(rows[0].n).toBe(800);
      const ledger = await h.pool.query(`SELECT rows::int FROM etl.appended_runs WHERE job = 'l' AND run_key = $1`, [
        runKey,
      ]);
      expect(ledger.rows).toEqual([{ rows: 400 }]);
    },
  );

  it('merge upserts by key, and within one run the last row for a key wins', async () => {
    const table = `${h.schema}.ledger_merge`;
    const params = { ROWS: '300' };
    const config = h.config({
      m: jobEntry(
        { name: 'Finance/Ledger.avx', outputType: 'json', paging: 100, parameters: params },
        { table, mode: 'merge', key: ['konto'] },
      ),
    });
    await h.run(config, 'm');
    const data = reportData('Finance/Ledger.avx', params, 1)!;
    const last = new Map<string, string>();
    for (let i = 0; i < data.rowCount; i++) last.set(data.row(i)[1]!, data.row(i)[0]!);
    const read = async () =>
      Object.fromEntries(
        (
          await h.pool.query<{ konto: string; nr: string }>(`SELECT konto, buchung_nr::text AS nr FROM ${table}`)
        ).rows.map((r) => [r.konto, r.nr]),
      );
    expect(await read()).toEqual(Object.fromEntries(last));
    // A second run with other rows: keys seen again are updated, none duplicated.
    await h.pool.query(`UPDATE ${table} SET text = 'stale'`);
    await h.run(
      h.config({
        m: jobEntry(
          { name: 'Finance/Ledger.avx', outputType: 'json', paging: 100, parameters: { ROWS: '60' } },
          { table, mode: 'merge', key: ['konto'] },
        ),
      }),
      'm',
    );
    const { rows } = await h.pool.query(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE text = 'stale')::int AS stale FROM ${table}`,
    );
    expect(rows[0]).toEqual({ n: last.size, stale: 0 });
  });

  it(
    'replace keeps views, grants and indexes, and a concurrent reader sees only ' + 'complete old or complete new rows',
    async () => {
      const table = `${h.schema}.orders_replace`;
      const cfg = (rows: string) =>
        h.config({
          r: jobEntry({ name: 'Sales/Orders', outputType: 'txt', paging: 500, parameters: { ROWS: rows } }, { table }),
        });
      await h.run(cfg('3000'), 'r');
      await h.pool.query(`CREATE VIEW ${h.schema}.orders_view AS SELECT auftrag_nr, betrag FROM ${table}`);
      await h.pool.query(`CREATE INDEX orders_replace_kunde_idx ON ${table} (kunde)`);
      await h.pool.query(`GRANT SELECT ON ${table} TO PUBLIC`);
      h.sim.setFaults({ latencyMs: 40 });
      const counts = new Set<number>();
      let loading = true;
      const reader = (async () => {
        while (loading) {
          const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM ${h.schema}.orders_view`);
          counts.add(rows[0].n);
          await new Promise((r) => setTimeout(r, 5));
        }
      })();
      let result: Awaited<ReturnType<typeof h.run>>;
      try {
        result = await h.run(cfg('2000'), 'r');
      } finally {
        loading = false;
        h.sim.setFaults({});
      }
      await reader;
      // The recorded duration covers the whole run, the slow page downloads included (not only until the load began).
      const recorded = await getAttempt(h.pool, result.attemptId);
      expect(Number(recorded!.duration_ms)).toBeGreaterThanOrEqual(result.durationMs * 0.8);
      expect(recorded!.finished_at!.getTime() - recorded!.started_at.getTime()).toBeGreaterThanOrEqual(
        result.durationMs * 0.8,
      );
      const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM ${h.schema}.orders_view`);
      expect(rows[0].n).toBe(2000);
      expect([...counts].every((n) => n === 3000 || n === 2000)).toBe(true);
      expect(counts.has(3000)).toBe(true);
      const idx = await h.pool.query(
        `SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = 'orders_replace_kunde_idx'`,
        [h.schema],
      );
      expect(idx.rowCount).toBe(1);
      const grant = await h.pool.query(`SELECT has_table_privilege('public', $1, 'SELECT') AS ok`, [table]);
      expect(grant.rows[0].ok).toBe(true);
    },
  );
});

it('adds new report columns to an existing target and keeps the types it has', async () => {
  const table = `${h.schema}.stock_evolving`;
  await h.pool.query(`CREATE TABLE ${table} (artikel text PRIMARY KEY, bestand integer, extra text DEFAULT 'kept')`);
  await h.pool.query(`INSERT INTO ${table} VALUES ('old', 1, 'x')`);
  const config = h.config({ s: jobEntry({ name: 'Stock/Levels', outputType: 'json' }, { table }) });
  const result = await h.run(config, 's');
  expect(result.plan).toBe('inference-staging');
  expect(await columnTypes(h.pool, table)).toEqual({
    artikel: 'text',
    bestand: 'integer',
    extra: 'text',
    lager: 'text',
    stand: 'timestamp with time zone',
  });
  const { rows } = await h.pool.query(
    `SELECT count(*)::int AS n, count(*) FILTER (WHERE artikel = 'old')::int AS old FROM ${table}`,
  );
  expect(rows[0]).toEqual({ n: 40, old: 0 });
  // The next run finds every column and copies straight into the target.
  expect((await h.run(config, 's')).plan).toBe('direct');
});

it('survives connection resets mid-page and gateway errors: every row arrives exactly once', async () => {
  const table = `${h.schema}.orders_faults`;
  const params = { ROWS: '3000' };
  h.sim.setFaults({ resetRate: 0.4, errorRate: 0.15 });
  try {
    const config = h.config({
      f: jobEntry({ name: 'Sales/Orders', outputType: 'json_compact', paging: 300, parameters: params }, { table }),
    });
    // A 5xx on the start of a report is not retried inside the run (the job may exist already): the attempt fails
    // as retryable and the next attempt of the same run starts again, as the queue does.
    for (let attempt = 1; ; attempt++) {
      const err = await h.run(config, 'f', { runKey: 'faults' }).then(
        () => undefined,
        (e: { retryable?: boolean; error?: { stage?: string } }) => e,
      );
      if (!err) break;
      expect(err).toMatchObject({ retryable: true, error: { stage: 'start' } });
      expect(attempt).toBeLessThan(10);
    }
  } finally {
    h.sim.setFaults({});
  }
  expect(h.sim.counters().faultsInjected.resets).toBeGreaterThan(0);
  expect(await loadedRows(h.pool, table, 'Sales/Orders.avw', params)).toEqual(
    servedRows('Sales/Orders.avw', params, 1),
  );
});

it('refuses a declared type that is not a type, or that tries to be more than one column', async () => {
  for (const type of ['bigintt', 'text, evil text']) {
    const config = h.config({
      d: jobEntry(
        { name: 'Stock/Levels', outputType: 'txt' },
        { table: `${h.schema}.bad_decl`, columns: { bestand: type } },
      ),
    });
    const err = await h.run(config, 'd').catch((e: unknown) => e as { code: string; message: string });
    expect(err).toMatchObject({ code: 'CONFIG_INVALID' });
    expect((err as { message: string }).message).toContain(
      `target.columns.bestand: "${type}" is not a PostgreSQL type`,
    );
  }
  const exists = await h.pool.query(`SELECT to_regclass($1) AS t`, [`${h.schema}.bad_decl`]);
  expect(exists.rows[0].t).toBeNull();
});

it('runs of different jobs can create their tables in the same new schema at the same time', async () => {
  const schema = `${h.schema}_new`;
  try {
    const config = h.config({
      a: jobEntry({ name: 'Stock/Levels', outputType: 'json' }, { table: `${schema}.a` }),
      b: jobEntry({ name: 'Stock/Levels', outputType: 'txt' }, { table: `${schema}.b` }),
      c: jobEntry({ name: 'Stock/Levels', outputType: 'xml_query' }, { table: `${schema}.c` }),
    });
    const results = await Promise.all(['a', 'b', 'c'].map((j) => h.run(config, j)));
    expect(results.map((r) => r.rows)).toEqual([40, 40, 40]);
  } finally {
    await h.pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  }
});
