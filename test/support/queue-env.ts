/**
 * Helpers of the queue tests: a unique BullMQ prefix and job-name prefix per file, cleanup of both, waiting (the
 * suite's one {@link waitFor}), and a pino logger whose lines the test can read.
 */
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import type pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import type { Redis } from 'ioredis';
import { noAlerts } from '../../src/alerts/webhook-sender.ts';
import type { EtlConfig } from '../../src/config/schema.ts';
import { insertAttempt, type AttemptStart } from '../../src/history/attempts.ts';
import { silentLogger } from '../../src/logger.ts';
import { makeJanitor, type Janitor, type JanitorDeps } from '../../src/queue/janitor.ts';
import { makeQueue, type RunQueue } from '../../src/queue/queue.ts';
import { makeRunWorker, type RunWorker, type RunWorkerDeps } from '../../src/queue/worker.ts';
import type { SimulatorOptions } from '../../src/simulator/index.ts';
import { startHarness, type Harness } from './harness.ts';
import { waitFor } from './wait.ts';

export { waitFor };

/** Deletes every Redis key under `prefix:` (BullMQ keys and overlap locks of one test file). */
export async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
}

/** Deletes the run history of the jobs whose name starts with `jobPrefix` (a run's attempts go with it). */
export async function deleteRuns(pool: pg.Pool, jobPrefix: string): Promise<void> {
  await pool.query(`DELETE FROM etl.runs WHERE job LIKE $1`, [`${jobPrefix}%`]);
  await pool.query(`DELETE FROM etl.appended_runs WHERE job LIKE $1`, [`${jobPrefix}%`]);
  await pool.query(`DELETE FROM etl.reverts WHERE job LIKE $1`, [`${jobPrefix}%`]);
}

/**
 * A janitor (docs/operations.md "No orphans (the janitor)") of installation `deps.prefix` on the services `on` (a
 * harness) with a silent logger, jobs.yaml `config` and no alerts; the rest of `deps` adds to or overrides these.
 * The caller closes it.
 */
export function janitorOf(
  on: { pool: pg.Pool; redis: Redis },
  config: EtlConfig,
  deps: Partial<JanitorDeps> & { prefix: string },
): Janitor {
  return makeJanitor({
    pool: on.pool,
    redis: on.redis,
    logger: silentLogger,
    config: () => config,
    alerts: noAlerts,
    ...deps,
  });
}

/**
 * A run worker (docs/architecture.md "Flow of one run") of installation `deps.prefix` on the services `on` (a
 * harness) with a silent logger, taking runs at once; `config` is jobs.yaml, or a function that gives it as it is
 * now. The rest of `deps` adds to or overrides these. The caller closes it (`close(graceMs)`).
 */
export function workerOf(
  on: { pool: pg.Pool; redis: Redis },
  config: EtlConfig | (() => EtlConfig),
  deps: Partial<RunWorkerDeps> & { prefix: string },
): RunWorker {
  return makeRunWorker({
    config: typeof config === 'function' ? config : () => config,
    pool: on.pool,
    redis: on.redis,
    logger: silentLogger,
    ...deps,
  });
}

/**
 * The end of a queue test file (its afterAll): closes its queue, deletes its Redis keys under `prefix` and the run
 * history of its jobs (names starting with `jobPrefix`), and closes its harness. Either may be undefined when the
 * file's beforeAll failed before making it; what was made is still cleaned up.
 */
export async function closeQueueBench(
  h: Harness | undefined,
  queue: RunQueue | undefined,
  prefix: string,
  jobPrefix: string,
): Promise<void> {
  await queue?.close();
  if (!h) return;
  await deleteKeys(h.redis, prefix);
  await deleteRuns(h.pool, jobPrefix);
  await h.close();
}

/**
 * Waits ({@link waitFor}) until queue job `jobId` of `queue` is in BullMQ state `state` (`completed`, `failed`, ...)
 * and gives the job.
 * @param what the condition, for the failure's message (default `the queue job <state>`)
 * @throws Error `timed out after <ms> ms waiting for <what>`
 */
export function waitForQueueJob(
  queue: RunQueue,
  jobId: string,
  state: string,
  what = `the queue job ${state}`,
  timeoutMs?: number,
) {
  return waitFor(
    what,
    async () => {
      const j = await queue.getJob(jobId);
      return (await j?.getState()) === state && j;
    },
    timeoutMs,
  );
}

/**
 * The services of a queue test file: registers a beforeAll that starts its harness (`simOptions` for the simulator)
 * and makes its run queue under `prefix`, and an afterAll that cleans up as {@link closeQueueBench} does (the runs of
 * jobs named `jobPrefix`…). Hooks the file registers after this call run before that afterAll (vitest runs after-hooks
 * as a stack), so the workers they close are gone before the queue is. Read `h` and `queue` inside tests and hooks
 * only: they stand for what beforeAll made, and throw when read before.
 */
export function useQueueBench(
  prefix: string,
  jobPrefix: string,
  simOptions: SimulatorOptions = {},
): { h: Harness; queue: RunQueue } {
  let h: Harness | undefined;
  let queue: RunQueue | undefined;
  beforeAll(async () => {
    h = await startHarness(simOptions);
    queue = makeQueue(h.redis, prefix);
  });
  afterAll(() => closeQueueBench(h, queue, prefix, jobPrefix));
  return { h: madeLater('the harness', () => h), queue: madeLater('the queue', () => queue) };
}

/** Stands for the object `current()` gives once it is made: reads its properties, calls its methods on it. */
function madeLater<T extends object>(what: string, current: () => T | undefined): T {
  return new Proxy({} as T, {
    get(_, key) {
      const made = current();
      if (!made) throw new Error(`${what} starts with the test file's tests: read it inside a test or hook`);
      const value: unknown = Reflect.get(made, key);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(made) : value;
    },
  });
}

/** A logger that keeps its lines (parsed JSON) in `lines`. */
export function captureLogger(level = 'info'): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n'))
        if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level }, sink), lines };
}

/** One etl.attempts row as the queue tests read it. */
export interface AttemptRec {
  attempt_id: string;
  job: string;
  run_key: string;
  trigger: string;
  attempt: number;
  status: string;
  scheduled_for: Date | null;
  report_job_id: string | null;
  rows: string | null;
  started_at: Date;
  finished_at: Date | null;
  error: string | null;
  /** How far its reading got: read with attempt-progress.ts `readProgress`; null before its first page. */
  progress: unknown;
}

/**
 * Records a `running` attempt in the history as a process starting it would (history/attempts.ts insertAttempt), for
 * tests that need one there without running it: by default a manual run of its own (run key = attempt id) into `x.y`
 * (replace) by worker `test`; `a` says what differs.
 * @returns the attempt number, 1-based
 */
export function insertTestAttempt(
  pool: pg.Pool,
  a: Partial<AttemptStart> & Pick<AttemptStart, 'attemptId' | 'job'>,
): Promise<number> {
  return insertAttempt(pool, {
    runKey: a.attemptId,
    trigger: 'manual',
    targetTable: 'x.y',
    writeMode: 'replace',
    worker: 'test',
    ...a,
  });
}

/** The attempts of one job, oldest first. */
export async function attemptsOf(pool: pg.Pool, job: string): Promise<AttemptRec[]> {
  return (await pool.query<AttemptRec>('SELECT * FROM etl.attempts WHERE job = $1 ORDER BY started_at, attempt', [job]))
    .rows;
}

/** One etl.runs row (a logical run) as the tests read it. */
export interface RunRec {
  job: string;
  run_key: string;
  trigger: string;
  scheduled_for: Date | null;
  logical_start: Date | null;
  logical_end: Date | null;
  parameters: Record<string, string> | null;
  queue_job_id: string | null;
  /** When a queued run was put on the queue; null in the foreground. */
  queued_at: Date | null;
  /** When a worker began the run (or its first attempt in the foreground). */
  created_at: Date;
  attempts: number;
  status: string | null;
  first_started_at: Date | null;
  last_finished_at: Date | null;
  rows: string | null;
}

/** The logical runs of one job, oldest first. */
export async function runsOf(pool: pg.Pool, job: string): Promise<RunRec[]> {
  return (await pool.query<RunRec>('SELECT * FROM etl.runs WHERE job = $1 ORDER BY created_at, run_key', [job])).rows;
}
