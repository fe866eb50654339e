/**
 * `npm run bench -- append-lineage`: what the lineage columns of an append target (docs/loaded-tables.md "Lineage of
 * appended rows") cost PostgreSQL per row. The same rows (Sales/Orders-shaped, made by generate_series) are COPYed FROM
 * STDIN, in binary and in csv format, with the report's columns in the column list as report-etl's direct plan does,
 * into:
 * - plain: the report's columns alone (a target without lineage);
 * - constant: plus `_etl_run_key text` and `_etl_loaded_at timestamptz` with constant DEFAULTs (what storing the two
 *   values costs, nothing evaluated);
 * - immutable: with DEFAULT a function like `etl.load_run_key()` but declared IMMUTABLE although it reads a setting
 *   (migrations/0009 did so until 0018: the planner folds it into a constant once per statement), and `now()`;
 * - lineage: as src/warehouse/lineage.ts makes them (DEFAULT `etl.load_run_key()`, STABLE: evaluated for every row,
 *   and `now()`);
 * - column: the run key written in the COPY stream as one more column of every row, `_etl_loaded_at` DEFAULT `now()`.
 * Each COPY runs in a transaction that sets the run key, as a load does; the order of the tables changes every round.
 * Measured: the backend's CPU time (user + system, from /proc/<pid>/stat, when PostgreSQL runs on this machine: it
 * moves far less with the machine's load than wall time) and the wall time. Prints medians; writes
 * bench/results/<date>-append-lineage.json.
 *
 * Options (argv `--name value` or env): --rows/BENCH_ROWS (1000000), --repeats/BENCH_REPEATS (5).
 */
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import pgCopyStreams from 'pg-copy-streams';
import { makePool } from '../src/app/connections.ts';
import { migrate } from '../src/history/migrate.ts';
import { silentLogger } from '../src/logger.ts';
import { addLineageColumns } from '../src/warehouse/lineage.ts';
import { machine } from './lib/options.ts';
import { median } from './lib/report.ts';

function option(name: string, fallback: string): number {
  const k = process.argv.indexOf(`--${name}`);
  const raw = k > 0 ? process.argv[k + 1] : (process.env[`BENCH_${name.toUpperCase()}`] ?? fallback);
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: expected a positive whole number, got '${raw}'`);
  return n;
}
const ROWS = option('rows', '1000000');
const REPEATS = option('repeats', '5');
const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const COLUMNS = 'auftrag_nr, kunde, menge_stk, betrag, rabatt, erfasst_am, bemerkung, beleg_id';
const TABLES = ['plain', 'constant', 'immutable', 'lineage', 'column'] as const;
const FORMATS = ['binary', 'csv'] as const;
const load = (): string =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

const pool = makePool(silentLogger, databaseUrl, 2);
await migrate(pool);
await pool.end();
const db = new pg.Client({ connectionString: databaseUrl });
await db.connect();
const schema = `bench_${randomUUID().slice(0, 8)}`;
const table = (t: (typeof TABLES)[number]): string => `${schema}."${t}"`;
const started = Date.now();
const loadBefore = load();
const results: Record<string, { cpuMs: number[]; wallMs: number[] }> = {};
try {
  await db.query(`CREATE SCHEMA ${schema}`);
  await db.query(
    `CREATE TABLE ${schema}.src AS SELECT g::bigint AS auftrag_nr, 'Kunde ' || (g % 977) AS kunde,
       (g % 50)::bigint AS menge_stk,
       (g * 1.37)::numeric(12,2) AS betrag, (g % 7)::numeric AS rabatt, now() - g * interval '1 second' AS erfasst_am,
       CASE WHEN g % 3 = 0 THEN NULL ELSE 'Bemerkung ' || g END AS bemerkung, g::bigint * 1000003 AS beleg_id
       FROM generate_series(1, $1::int) g`,
    [ROWS],
  );
  for (const t of TABLES) await db.query(`CREATE TABLE ${table(t)} (LIKE ${schema}.src)`);
  await db.query(
    `ALTER TABLE ${table('constant')} ADD COLUMN _etl_run_key text DEFAULT 'sales_orders__2026-11-24T02:15:00.000Z',
       ADD COLUMN _etl_loaded_at timestamptz DEFAULT '2026-11-25 10:00:00+00'`,
  );
  await db.query(
    `CREATE FUNCTION ${schema}.immutable_run_key() RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
       AS $$ SELECT nullif(current_setting('report_etl.run_key', true), '') $$`,
  );
  await db.query(
    `ALTER TABLE ${table('immutable')} ADD COLUMN _etl_run_key text DEFAULT ${schema}.immutable_run_key(),
       ADD COLUMN _etl_loaded_at timestamptz DEFAULT now()`,
  );
  await addLineageColumns(db, { schema, table: 'lineage' });
  await db.query(
    `ALTER TABLE ${table('column')} ADD COLUMN _etl_run_key text, ADD COLUMN _etl_loaded_at timestamptz DEFAULT now()`,
  );
  // The rows once in each format, held in memory, so that every COPY reads the same bytes; `column`'s rows carry a
  // run key of a scheduled tick's length.
  const data: Record<string, Buffer> = {};
  for (const f of FORMATS) {
    for (const [key, select] of [
      [f, COLUMNS],
      [`${f} column`, `${COLUMNS}, 'sales_orders__2026-11-24T02:15:00.000Z'::text`],
    ]) {
      const chunks: Buffer[] = [];
      const out = db.query(pgCopyStreams.to(`COPY (SELECT ${select} FROM ${schema}.src) TO STDOUT WITH (FORMAT ${f})`));
      for await (const c of out) chunks.push(c as Buffer);
      data[key!] = Buffer.concat(chunks);
    }
  }
  const pid = (await db.query<{ p: number }>('SELECT pg_backend_pid() AS p')).rows[0]!.p;
  const backendCpuMs = (): number => {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
    } catch {
      return NaN;
    }
  };
  for (let r = 0; r < REPEATS; r++) {
    for (const f of FORMATS) {
      for (let k = 0; k < TABLES.length; k++) {
        const t = TABLES[(k + r) % TABLES.length]!;
        await db.query('BEGIN');
        await db.query(`SELECT set_config('report_etl.run_key', $1, true)`, [`sales_orders__${randomUUID()}`]);
        const cpu0 = backendCpuMs();
        const wall0 = performance.now();
        const columns = t === 'column' ? `${COLUMNS}, _etl_run_key` : COLUMNS;
        await pipeline(
          Readable.from([data[t === 'column' ? `${f} column` : f]!]),
          db.query(pgCopyStreams.from(`COPY ${table(t)} (${columns}) FROM STDIN WITH (FORMAT ${f})`)),
        );
        const wallMs = performance.now() - wall0;
        const cpuMs = backendCpuMs() - cpu0;
        await db.query('COMMIT');
        await db.query(`TRUNCATE ${table(t)}`);
        const res = (results[`${f} ${t}`] ??= { cpuMs: [], wallMs: [] });
        res.cpuMs.push(cpuMs);
        res.wallMs.push(wallMs);
      }
    }
  }
  const { rows: tagged } = await db.query<{ ok: boolean }>(`SELECT 1 FROM ${table('lineage')} LIMIT 1`);
  if (tagged.length !== 0) throw new Error('the lineage table was not emptied');
} finally {
  await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
  await db.end();
}

const lines = [
  `COPY FROM STDIN of ${ROWS} rows, medians of ${REPEATS}; backend CPU ms (wall ms), and the CPU over plain's:`,
];
const summary: Record<string, { cpuMs: number; wallMs: number; cpuOverPlain: number }> = {};
for (const f of FORMATS) {
  const plain = median(results[`${f} plain`]!.cpuMs);
  for (const t of TABLES) {
    const r = results[`${f} ${t}`]!;
    const cpuMs = median(r.cpuMs);
    summary[`${f} ${t}`] = { cpuMs, wallMs: median(r.wallMs), cpuOverPlain: cpuMs / plain };
    lines.push(
      `  ${f.padEnd(6)} ${t.padEnd(8)} ${String(Math.round(cpuMs)).padStart(6)} ms ` +
        `(${String(Math.round(median(r.wallMs))).padStart(5)} ms)  ${(cpuMs / plain).toFixed(2)}  ` +
        `[${r.cpuMs.map(Math.round).join(' ')}]`,
    );
  }
}
lines.push(`load average before ${loadBefore}, after ${load()}`);
const date = new Date().toISOString().replaceAll(':', '-').slice(0, 16);
const file = join(import.meta.dirname, 'results', `${date}-append-lineage.json`);
await mkdir(join(import.meta.dirname, 'results'), { recursive: true });
await writeFile(
  file,
  JSON.stringify(
    {
      date: new Date().toISOString(),
      machine: machine(),
      rows: ROWS,
      repeats: REPEATS,
      seconds: Math.round((Date.now() - started) / 1000),
      summary,
      results,
    },
    null,
    2,
  ) + '\n',
);
process.stdout.write(`${lines.join('\n')}\nresults: ${file}\n`);
