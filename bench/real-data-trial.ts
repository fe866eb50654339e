/**
 * `npm run bench -- real-data`: the real-data trial (docs/loaded-tables.md "Types" and "Values that would change").
 * 24 public datasets of the vega-datasets package (devDependency; BSD-3-Clause, the data CC0 or U.S. government works
 * per its datapackage.json), served by an in-process simulator as reports (SimulatorOptions.reports), are loaded in
 * json, json_compact, txt, txt_cstr, json_userdef and xml_query:
 * - fresh: into a new table; every cell must read back as the source sent it (text the same characters, numbers the
 *   same number, ISO dates and zone-less ISO timestamps the same day and local time, typed `date` and `timestamptz`);
 * - existing: the first 100 rows into a new table (its types fixed by them), then every row into that table: the load
 *   must be exact, or fail with VALUE_DOES_NOT_FIT naming the value, the table exactly as it was.
 * Values are rendered as a server would send them: a CSV column whose every value is a JSON number as numbers (bare in
 * JSON and txt), any other as text; a JSON file's values as they are written there (numbers digit for digit, through
 * JSON.parse's source text).
 *
 * Prints one line per dataset and type and a summary; exits 1 when a value changed or a load failed otherwise.
 * Options (argv `--name value` or env): --datasets/BENCH_DATASETS (comma list of file names, default all 24),
 * --types/BENCH_TYPES (default all six), --timezone/BENCH_TIMEZONE (the connection's, default Europe/Zurich); --keep
 * keeps the tables (schema trial_*) for a look.
 * Uses DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres), REDIS_URL, REPORT_ETL_QUEUE_PREFIX.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { makePool, makeRedis } from '../src/app/connections.ts';
import { configSchema } from '../src/config/schema.ts';
import { resolveJob } from '../src/config/load.ts';
import { migrate } from '../src/history/migrate.ts';
import { silentLogger } from '../src/logger.ts';
import { AttemptFailedError, runAttempt } from '../src/pipeline/run-attempt.ts';
import { startSimulator, type ExtraReport } from '../src/simulator/index.ts';
import type { ReportColumn } from '../src/simulator/catalogue.ts';
import { USERDEF_ROWS_POINTER } from '../src/simulator/render-userdef.ts';
import { normaliseColumnNames, quoteIdent } from '../src/warehouse/identifiers.ts';
import { readCsv } from '../test/support/vega.ts';

const DATA = join(dirname(createRequire(import.meta.url).resolve('vega-datasets')), '..', 'data');
const ALL_DATASETS = [
  'movies.json',
  'cars.json',
  'penguins.json',
  'zipcodes.csv',
  'github.csv',
  'birdstrikes.csv',
  'flights-200k.json',
  'seattle-weather.csv',
  'species.csv',
  'airports.csv',
  'weather.csv',
  'seattle-weather-hourly-normals.csv',
  'stocks.csv',
  'sp500-2000.csv',
  'disasters.csv',
  'gapminder.json',
  'iowa-electricity.csv',
  'la-riots.csv',
  'us-employment.csv',
  'co2-concentration.csv',
  'football.json',
  'political-contributions.json',
  'jobs.json',
  'unemployment-across-industries.json',
];
const ALL_TYPES = ['json', 'json_compact', 'txt', 'txt_cstr', 'json_userdef', 'xml_query'] as const;
type RowType = (typeof ALL_TYPES)[number];
const FIRST_ROWS = 100;

function option(name: string, fallback: string): string {
  const k = process.argv.indexOf(`--${name}`);
  return k > 0 ? process.argv[k + 1]! : (process.env[`BENCH_${name.toUpperCase()}`] ?? fallback);
}
const datasets = option('datasets', ALL_DATASETS.join(',')).split(',');
const types = option('types', ALL_TYPES.join(',')).split(',') as RowType[];
const timezone = option('timezone', 'Europe/Zurich');
const keep = process.argv.includes('--keep');
for (const t of types)
  if (!ALL_TYPES.includes(t)) throw new Error(`--types: ${t} is not one of ${ALL_TYPES.join(', ')}`);
for (const d of datasets)
  if (!ALL_DATASETS.includes(d)) throw new Error(`--datasets: ${d} is not one of ${ALL_DATASETS.join(', ')}`);
const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const prefix = process.env.REPORT_ETL_QUEUE_PREFIX ?? 'report-etl';
const log = (s: string): void => void process.stdout.write(`${s}\n`);

/** The report a dataset is served as: `Real/<file name, A-Z a-z 0-9 _ only>.avw`. */
function reportPath(file: string): string {
  return `Real/${file.replace(/\.(csv|json)$/, '').replace(/[^A-Za-z0-9_]/g, '_')}.avw`;
}

/** A JSON number: what a CSV column must hold throughout to be sent as numbers. */
const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/** A CSV file as a report: '' is NULL; a column of JSON numbers only is a number column. */
function csvReport(file: string): ExtraReport {
  const [header, ...records] = readCsv(file);
  const rows = records.filter((r) => r.length === header!.length).map((r) => r.map((v) => (v === '' ? null : v)));
  const columns = header!.map((name, i): ReportColumn => {
    const values = rows.map((r) => r[i]).filter((v): v is string => v !== null);
    const numbers = values.length > 0 && values.every((v) => JSON_NUMBER.test(v));
    return { name, kind: numbers ? 'decimal' : 'text' };
  });
  return { path: reportPath(file), columns, rows };
}

/** A number's source text, as the JSON file writes it (JSON.parse's reviver sees it). */
class NumberText {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** A JSON file of flat records as a report: values as written; a key a record lacks is left out of its row. */
function jsonReport(file: string): ExtraReport {
  const records = JSON.parse(
    readFileSync(join(DATA, file), 'utf8'),
    (_key, value: unknown, context?: { source?: string }) =>
      typeof value === 'number' && context?.source !== undefined ? new NumberText(context.source) : value,
  ) as Record<string, unknown>[];
  const names = [...new Set(records.flatMap((r) => Object.keys(r)))];
  const kindOf = (name: string): ReportColumn['kind'] => {
    const seen = new Set(
      records
        .map((r) => r[name])
        .filter((v) => v !== null && v !== undefined)
        .map((v) => typeof v),
    );
    if (seen.size === 1 && seen.has('boolean')) return 'boolean';
    if (seen.size === 1 && records.some((r) => r[name] instanceof NumberText)) return 'decimal';
    return 'text';
  };
  const columns = names.map((name) => ({ name, kind: kindOf(name) }));
  const rows = records.map((r) =>
    names.map((n) => {
      const v = r[n];
      if (v === undefined) return undefined;
      if (v === null) return null;
      if (v instanceof NumberText) return v.text;
      return typeof v === 'object' ? JSON.stringify(v) : String(v);
    }),
  );
  return { path: reportPath(file), columns, rows };
}

/** A decimal's value as digits and exponent, so that 1.5e-7 equals 0.00000015. */
function decimalValue(t: string): string {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(t);
  if (!m) return `not a number: ${t}`;
  const all = m[2]! + (m[3] ?? '');
  const digits = all.replace(/^0+/, '').replace(/0+$/, '');
  if (digits === '') return '0';
  const exp = m[2]!.length - (all.length - all.replace(/^0+/, '').length) + Number(m[4] ?? 0);
  return `${m[1] === '-' ? '-' : ''}0.${digits}e${exp}`;
}

const ISO_TIMESTAMP = /^(\d{4}-\d\d-\d\d)[Tt ](\d\d:\d\d)(?::(\d\d)(?:[.,](\d+))?)?(Z|z|[+-]\d\d(?::?\d\d)?)?$/;

/**
 * A timestamp as the comparison reads it back: zone-less → local `yyyy-mm-dd hh:mm:ss.ffffff` in the connection's
 * zone; with an offset → the same in UTC.
 */
function timestampText(t: string): string | undefined {
  const m = ISO_TIMESTAMP.exec(t);
  if (!m) return undefined;
  const local = `${m[1]} ${m[2]}:${m[3] ?? '00'}.${(m[4] ?? '').padEnd(6, '0')}`;
  if (m[5] === undefined) return local;
  const off = m[5].toUpperCase() === 'Z' ? '+00:00' : m[5];
  const sign = off[0] === '-' ? -1 : 1;
  const digits = off.slice(1).replace(':', '');
  const minutes = sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2) || '0'));
  const utc = new Date(Date.parse(`${m[1]}T${m[2]}:${m[3] ?? '00'}Z`) - minutes * 60_000).toISOString();
  return `${utc.slice(0, 10)} ${utc.slice(11, 19)}.${(m[4] ?? '').padEnd(6, '0')}`;
}

const NUMBER_TYPE = /^(bigint|integer|smallint|numeric|double precision|real)/;

/**
 * A source value as the comparison sees it in a column of `type`: numbers by value, timestamps as the wall clock read
 * back (`utc`: in UTC, for a column whose values carry offsets; else in the connection's zone), xml_query's empty
 * text as NULL (the format cannot tell them apart), anything else as its characters.
 */
function sourceKey(v: string | null, type: string, outputType: RowType, utc: boolean): string | null {
  if (v === null || (v === '' && outputType === 'xml_query')) return null;
  if (NUMBER_TYPE.test(type)) return decimalValue(v);
  if (type === 'timestamp with time zone') {
    const withOffset = ISO_TIMESTAMP.exec(v)?.[5] !== undefined;
    return withOffset === utc ? (timestampText(v) ?? v) : `not comparable: ${v}`;
  }
  return v;
}

/** A loaded cell (as text, see {@link readBack}) as {@link sourceKey} sees its value. */
function loadedKey(v: string | null, type: string, utc: boolean): string | null {
  if (v === null) return null;
  if (NUMBER_TYPE.test(type)) return decimalValue(v);
  if (type === 'timestamp with time zone') return v.split('|')[utc ? 1 : 0]!;
  return v;
}

/** The loaded cells, as text; timestamps as `local|utc`. */
async function readBack(
  pool: ReturnType<typeof makePool>,
  table: string,
  names: string[],
  types: Record<string, string>,
): Promise<(string | null)[][]> {
  const f = `'YYYY-MM-DD HH24:MI:SS.US'`;
  const exprs = names.map((n) =>
    types[n] === 'timestamp with time zone'
      ? `to_char(${quoteIdent(n)} AT TIME ZONE '${timezone}', ${f}) || '|' || ` +
        `to_char(${quoteIdent(n)} AT TIME ZONE 'UTC', ${f})`
      : `${quoteIdent(n)}::text`,
  );
  const { rows } = await pool.query<{ r: (string | null)[] }>(
    `SELECT ARRAY[${exprs.join(', ')}]::text[] AS r FROM ${table}`,
  );
  return rows.map((r) => r.r);
}

async function columnTypes(pool: ReturnType<typeof makePool>, table: string): Promise<Record<string, string>> {
  const { rows } = await pool.query<{ name: string; type: string }>(
    `SELECT attname AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute
      WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`,
    [table],
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.type]));
}

async function snapshot(pool: ReturnType<typeof makePool>, table: string): Promise<string> {
  const { rows } = await pool.query<{ m: string; n: number }>(
    `SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS m, count(*)::int AS n FROM ${table} t`,
  );
  return `${rows[0]!.n}:${rows[0]!.m}`;
}

/** What one load found. */
interface Outcome {
  ok: boolean;
  rows: number;
  cells: number;
  changed: number;
  /** Rows read back as no source row (a value changed in them). */
  note: string;
  failed?: string;
  untouched?: boolean;
  typed: string[];
}

const reports = datasets.map((d) => (d.endsWith('.csv') ? csvReport(d) : jsonReport(d)));
const pool = makePool(silentLogger, databaseUrl, 4);
await migrate(pool);
const redis = makeRedis(silentLogger, process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const sim = await startSimulator({ jobDurationMs: 20, reports });
const schema = `trial_${randomUUID().slice(0, 8)}`;
await pool.query(`CREATE SCHEMA ${schema}`);

async function load(report: ExtraReport, outputType: RowType, table: string, rows?: number): Promise<unknown> {
  const config = configSchema.parse({
    connections: {
      sim: {
        baseUrl: sim.url,
        clientId: 'demo-client',
        clientSecret: 'demo-secret',
        timezone,
        pollIntervalMs: 20,
        pollMaxIntervalMs: 100,
      },
    },
    jobs: {
      j: {
        connection: 'sim',
        report: {
          mandant: 7777,
          name: report.path,
          outputType,
          paging: 50_000,
          ...(rows === undefined ? {} : { parameters: { ROWS: String(rows) } }),
        },
        target: { table, ...(outputType === 'json_userdef' ? { rowsAt: USERDEF_ROWS_POINTER } : {}) },
      },
    },
  });
  return runAttempt({ job: resolveJob(config, 'j'), pool, redis, logger: silentLogger, prefix }).then(
    () => undefined,
    (e: unknown) => e,
  );
}

/**
 * Compares the table with the report's rows cell by cell: each row as the tuple of its cells' keys, the table's rows
 * as a multiset (a table has no order: PostgreSQL may put a later row into an earlier page's free space).
 */
async function compare(report: ExtraReport, outputType: RowType, table: string): Promise<Outcome> {
  const names = normaliseColumnNames(report.columns.map((c) => c.name));
  const types = await columnTypes(pool, table);
  const got = await readBack(pool, table, names, types);
  const colTypes = names.map((n) => types[n]!);
  const utc = names.map((_, c) =>
    report.rows.every((r) => r[c] === null || r[c] === undefined || ISO_TIMESTAMP.exec(r[c])?.[5] !== undefined),
  );
  const want = new Map<string, number>();
  const wantRow = new Map<string, number>();
  for (const [r, row] of report.rows.entries()) {
    const key = JSON.stringify(colTypes.map((t, c) => sourceKey(row[c] ?? null, t, outputType, utc[c]!)));
    want.set(key, (want.get(key) ?? 0) + 1);
    if (!wantRow.has(key)) wantRow.set(key, r + 1);
  }
  let changed = 0;
  let firstGot: string | undefined;
  for (const row of got) {
    const key = JSON.stringify(colTypes.map((t, c) => loadedKey(row[c] ?? null, t, utc[c]!)));
    const left = want.get(key) ?? 0;
    if (left > 0) want.set(key, left - 1);
    else {
      changed++;
      firstGot ??= key;
    }
  }
  const missing = [...want].find(([, left]) => left > 0);
  let note = '';
  if (changed || missing)
    note =
      `${changed} rows read back as no source row; source row ${missing ? wantRow.get(missing[0]) : '?'} ` +
      `${missing?.[0] ?? ''} vs. read back ${firstGot ?? ''}`;
  if (got.length !== report.rows.length) note = `${got.length} rows loaded of ${report.rows.length}; ${note}`;
  const typed = names
    .filter((c) => /^(date|timestamp)/.test(types[c]!))
    .map((c) => `${c}:${types[c] === 'date' ? 'date' : 'tstz'}`);
  return {
    ok: changed === 0 && got.length === report.rows.length,
    rows: got.length,
    cells: got.length * names.length,
    changed,
    note,
    typed,
  };
}

const results: { dataset: string; outputType: RowType; fresh: Outcome; existing: Outcome }[] = [];
const started = Date.now();
log(
  `real-data trial: ${reports.length} datasets × ${types.length} types, zone ${timezone}, ` +
    `load ${loadavg()[0]!.toFixed(2)}`,
);
log(
  `${'dataset'.padEnd(36)} ${'type'.padEnd(12)} ${'rows'.padStart(7)} ${'cols'.padStart(4)}  fresh        ` +
    `existing (first ${FIRST_ROWS}, then all)`,
);
let k = 0;
for (const report of reports) {
  for (const outputType of types) {
    k++;
    const fresh = `${schema}.f${k}`;
    const failedFresh = await load(report, outputType, fresh);
    const freshOutcome: Outcome = failedFresh
      ? { ok: false, rows: 0, cells: 0, changed: 0, note: describe(failedFresh), failed: code(failedFresh), typed: [] }
      : await compare(report, outputType, fresh);
    if (!keep) await pool.query(`DROP TABLE IF EXISTS ${fresh}`);

    const existing = `${schema}.e${k}`;
    let existingOutcome: Outcome;
    const failedFirst = await load(report, outputType, existing, FIRST_ROWS);
    if (failedFirst) {
      existingOutcome = {
        ok: false,
        rows: 0,
        cells: 0,
        changed: 0,
        note: `first load: ${describe(failedFirst)}`,
        failed: code(failedFirst),
        typed: [],
      };
    } else {
      const before = await snapshot(pool, existing);
      const failedAll = await load(report, outputType, existing);
      if (failedAll) {
        const untouched = (await snapshot(pool, existing)) === before;
        const c = code(failedAll);
        existingOutcome = {
          ok: c === 'VALUE_DOES_NOT_FIT' && untouched,
          rows: 0,
          cells: 0,
          changed: 0,
          note: describe(failedAll),
          failed: c,
          untouched,
          typed: [],
        };
      } else existingOutcome = await compare(report, outputType, existing);
    }
    if (!keep) await pool.query(`DROP TABLE IF EXISTS ${existing}`);
    results.push({
      dataset: datasets[reports.indexOf(report)]!,
      outputType,
      fresh: freshOutcome,
      existing: existingOutcome,
    });
    log(
      `${datasets[reports.indexOf(report)]!.padEnd(36)} ${outputType.padEnd(12)} ` +
        `${String(report.rows.length).padStart(7)} ` +
        `${String(report.columns.length).padStart(4)}  ${status(freshOutcome).padEnd(12)} ${status(existingOutcome)}` +
        `${freshOutcome.typed.length ? `  typed ${freshOutcome.typed.join(' ')}` : ''}`,
    );
    for (const [what, o] of [
      ['fresh', freshOutcome],
      ['existing', existingOutcome],
    ] as const)
      if (o.note && (!o.ok || o.failed)) log(`    ${what}: ${o.note}`);
  }
}

function code(err: unknown): string {
  return err instanceof AttemptFailedError ? err.code : 'ERROR';
}

function describe(err: unknown): string {
  const m = err instanceof Error ? err.message : String(err);
  return `${code(err)}: ${m.length > 300 ? `${m.slice(0, 300)}…` : m}`;
}

function status(o: Outcome): string {
  if (o.failed) return o.ok ? 'refused, kept' : `FAILED ${o.failed}${o.untouched === false ? ' TOUCHED' : ''}`;
  return o.ok ? 'exact' : `CHANGED ${o.changed} rows`;
}

const all = results.flatMap((r) => [r.fresh, r.existing]);
const freshLoads = results.filter((r) => !r.fresh.failed);
const freshExact = results.filter((r) => r.fresh.ok && !r.fresh.failed);
const refused = results.filter((r) => r.existing.failed && r.existing.ok);
const bad = all.filter((o) => !o.ok);
log('');
log(
  `summary: ${results.length} dataset × type pairs; fresh: ${freshExact.length} exact of ${results.length}, ` +
    `${freshLoads.reduce((s, r) => s + r.fresh.rows, 0)} rows, ` +
    `${freshLoads.reduce((s, r) => s + r.fresh.cells, 0)} cells, ` +
    `${all.reduce((s, o) => s + o.changed, 0)} rows with a changed value; ` +
    `existing: ${results.filter((r) => !r.existing.failed && r.existing.ok).length} exact, ` +
    `${refused.length} refused with VALUE_DOES_NOT_FIT and the table untouched; ${bad.length} loads neither exact ` +
    `nor refused cleanly; ${Math.round((Date.now() - started) / 1000)} s, load ${loadavg()[0]!.toFixed(2)}`,
);
if (keep) log(`tables kept in schema ${schema}`);
else await pool.query(`DROP SCHEMA ${schema} CASCADE`);
await pool.end();
redis.disconnect();
await sim.close();
process.exitCode = bad.length ? 1 : 0;
