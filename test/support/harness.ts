/**
 * An end-to-end test bench: the simulator over real HTTP, the real PostgreSQL (own schema per file) and the
 * real Redis (own key prefix), a jobs.yaml built in code, and helpers to read back what was loaded.
 */
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import type { Redis } from 'ioredis';
import { configSchema, type EtlConfig } from '../../src/config/schema.ts';
import { makePool, makeRedis } from '../../src/app/connections.ts';
import { silentLogger } from '../../src/logger.ts';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator/index.ts';
import { reportData, type ReportColumn } from '../../src/simulator/catalogue.ts';
import { migrate } from '../../src/history/migrate.ts';
import { AttemptFailedError, type AttemptOptions, type AttemptResult } from '../../src/pipeline/attempt.ts';
import { resolveJob } from '../../src/config/load.ts';
import { runAttempt } from '../../src/pipeline/run-attempt.ts';
import { normaliseColumnNames, quoteIdent } from '../../src/warehouse/identifiers.ts';
import { DATABASE_URL, REDIS_URL, uniqueName } from './env.ts';

export interface Harness {
  sim: Simulator;
  pool: pg.Pool;
  redis: Redis;
  /** This file's schema for target tables. */
  schema: string;
  /** A validated config with connection `sim` and the given jobs (targets default into `schema`). */
  config(jobs: Record<string, unknown>, connection?: Record<string, unknown>): EtlConfig;
  /**
   * Runs one attempt of job `name` of `config` in the foreground (runAttempt, docs/architecture.md "Flow of one run")
   * with this harness's pool and Redis and a silent logger; `options` adds to them or overrides them.
   * @param request trigger, run key, logical time, parameters (default: a manual run of its own, now)
   * @throws AttemptFailedError when the attempt fails (see {@link attemptFailure})
   */
  run(
    config: EtlConfig,
    name: string,
    request?: AttemptOptions['request'],
    options?: Partial<Omit<AttemptOptions, 'job' | 'request'>>,
  ): Promise<AttemptResult>;
  close(): Promise<void>;
}

/**
 * The harness of a test file: started before its tests, closed after them, and after each test a check that every
 * report job a run created was deleted (docs/report-export-service.md "What the service does": whatever happened).
 * Use its fields inside tests and hooks only: it throws when read before the file's tests start.
 */
export function useHarness(simOptions: SimulatorOptions = {}): Harness {
  let started: Harness | undefined;
  beforeAll(async () => {
    started = await startHarness(simOptions);
  });
  afterAll(async () => {
    await started?.close();
  });
  afterEach(() => {
    const c = started!.sim.counters();
    expect(c.openJobs).toEqual([]);
    expect(c.jobsDeleted).toBe(c.jobsCreated);
  });
  return new Proxy({} as Harness, {
    get(_, key) {
      if (!started) throw new Error("the harness starts with the test file's tests: read it inside a test or hook");
      return Reflect.get(started, key);
    },
  });
}

/** Starts the simulator, connects to Postgres and Redis, migrates, and makes a fresh schema. */
export async function startHarness(simOptions: SimulatorOptions = {}): Promise<Harness> {
  const sim = await startSimulator({ jobDurationMs: 50, ...simOptions });
  const pool = makePool(silentLogger, DATABASE_URL, 6);
  const redis = makeRedis(silentLogger, REDIS_URL);
  await migrate(pool);
  const schema = uniqueName('t');
  await pool.query(`CREATE SCHEMA ${schema}`);
  return {
    sim,
    pool,
    redis,
    schema,
    config(jobs, connection = {}) {
      return configSchema.parse({
        connections: {
          sim: {
            baseUrl: sim.url,
            clientId: 'demo-client',
            clientSecret: 'demo-secret',
            timezone: 'Europe/Zurich',
            pollIntervalMs: 20,
            pollMaxIntervalMs: 100,
            ...connection,
          },
        },
        jobs,
      });
    },
    run(config, name, request = {}, options = {}) {
      // The suite's prefix (global-setup.ts), whose keys its teardown deletes: the access tokens it caches go there.
      const prefix = process.env.REPORT_ETL_QUEUE_PREFIX;
      return runAttempt({
        job: resolveJob(config, name),
        request,
        pool,
        redis,
        logger: silentLogger,
        ...(prefix ? { prefix } : {}),
        ...options,
      });
    },
    async close() {
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await pool.end();
      redis.disconnect();
      await sim.close();
    },
  };
}

/** A job entry for {@link Harness.config}. */
export function jobEntry(report: Record<string, unknown>, target: Record<string, unknown>): Record<string, unknown> {
  return { connection: 'sim', report: { mandant: 7777, paging: 1000, ...report }, target };
}

/**
 * The error of an attempt that must fail: awaits `attempt` (a runAttempt promise, or one that ends as it does),
 * expects it to have rejected with an AttemptFailedError and gives that error (docs/architecture.md "Flow of one run").
 * @throws the assertion's error when the attempt succeeded or rejected with anything else
 */
export async function attemptFailure(attempt: Promise<unknown>): Promise<AttemptFailedError> {
  const err = await attempt.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AttemptFailedError);
  return err as AttemptFailedError;
}

/** A value as the tests compare it: canonical strings, timestamps as epoch ms. */
type Cmp = string | null;

function canonical(kind: ReportColumn['kind'], v: string | null, emptyIsNull: boolean): Cmp {
  if (v === null) return null;
  if (kind === 'timestamp') return String(Date.parse(v));
  if (emptyIsNull && v === '') return null;
  return v;
}

/**
 * The rows the simulator serves for a report, as sorted JSON lines of canonical values.
 * @param emptyIsNull xml_query cannot tell empty text from null (docs/report-export-service.md "Output page shapes")
 */
export function servedRows(path: string, params: Record<string, string>, seed: number, emptyIsNull = false): string[] {
  const data = reportData(path, params, seed)!;
  const out: string[] = [];
  for (let i = 0; i < data.rowCount; i++) {
    const row = data.row(i);
    out.push(JSON.stringify(data.columns.map((c, j) => canonical(c.kind, row[j] ?? null, emptyIsNull))));
  }
  return out.sort();
}

/** The loaded rows of a table for the report's columns, as sorted JSON lines comparable with {@link servedRows}. */
export async function loadedRows(
  pool: pg.Pool,
  table: string,
  path: string,
  params: Record<string, string> = {},
): Promise<string[]> {
  const data = reportData(path, params, 1)!;
  const names = normaliseColumnNames(data.columns.map((c) => c.name));
  const exprs = data.columns.map((c, i) => {
    const col = quoteIdent(names[i]!);
    return c.kind === 'timestamp' ? `(extract(epoch FROM ${col}) * 1000)::bigint::text` : `${col}::text`;
  });
  const { rows } = await pool.query<{ r: (string | null)[] }>({
    text: `SELECT ARRAY[${exprs.join(', ')}] AS r FROM ${table}`,
  });
  return rows.map((r) => JSON.stringify(r.r)).sort();
}

/** Column name → type of a table, as format_type spells it. */
export async function columnTypes(pool: pg.Pool, table: string): Promise<Record<string, string>> {
  const { rows } = await pool.query<{ name: string; type: string }>(
    `SELECT attname AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute WHERE attrelid = ` +
      `$1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
    [table],
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.type]));
}
