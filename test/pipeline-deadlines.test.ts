/**
 * A broken or hostile server is bounded in time and volume (docs/architecture.md "Limits"): a page that trickles
 * fails at its pageTimeoutMs, an attempt at its maxRunMs, pages past `pages=` and rows past `rows=` at the first one
 * that arrives. Each failure is retryable, leaves the target as it was, deletes the report job and leaves no attempt
 * `running`; in a worker the run's concurrency and report slot come free. Simulator over real HTTP (its SIM_FAULT
 * parameter: trickle, endless-pages, extra-row), real PostgreSQL and Redis.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { EtlConfig } from '../src/config/schema.ts';
import { enqueueManual } from '../src/queue/manual-run.ts';
import { makeQueue, type RunQueue } from '../src/queue/queue.ts';
import type { RunWorker } from '../src/queue/worker.ts';
import { ReportSlots } from '../src/report-api/report-slots.ts';
import { startSimulator, type Simulator } from '../src/simulator/index.ts';
import { uniqueName } from './support/env.ts';
import { attemptFailure, type Harness, jobEntry, startHarness } from './support/harness.ts';
import { attemptsOf, deleteKeys, deleteRuns, waitFor, waitForQueueJob, workerOf } from './support/queue-env.ts';

/** Generous: a deadline of a second or two must show within this on a busy machine. */
const OUTCOME_WAIT_MS = 45_000;

let h: Harness;
let jp: string;
let table: string;
const extra: { sims: Simulator[]; workers: RunWorker[]; queue?: RunQueue; prefix?: string } = { sims: [], workers: [] };

beforeAll(async () => {
  h = await startHarness();
  jp = uniqueName('jd');
  table = `${h.schema}.orders`;
  await h.pool.query(`CREATE TABLE ${table} (auftrag_nr bigint, kunde text)`);
  await h.pool.query(`INSERT INTO ${table} (auftrag_nr, kunde) VALUES (1, 'old row'), (2, 'old row')`);
});
afterAll(async () => {
  await Promise.all(extra.workers.map((w) => w.close(0)));
  await extra.queue?.close();
  if (extra.prefix) await deleteKeys(h.redis, extra.prefix);
  await Promise.all(extra.sims.map((s) => s.close()));
  await deleteRuns(h.pool, jp);
  await h?.close();
});

/** A fingerprint of the target's full content. */
async function snapshot(): Promise<string> {
  const { rows } = await h.pool.query(
    `SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS m, count(*)::int AS n FROM ${table} t`,
  );
  return `${rows[0].n}:${rows[0].m}`;
}

/**
 * Sales/Orders, 450 rows in pages of 100 (rows=450;pages=5), into the test's table (or `job.target`), with `report`
 * and `job` on top.
 */
function ordersJob(report: Record<string, unknown> = {}, job: Record<string, unknown> = {}): Record<string, unknown> {
  const base = jobEntry(
    {
      name: 'Sales/Orders',
      outputType: 'json',
      paging: 100,
      ...report,
      parameters: { ROWS: '450', ...(report.parameters as object) },
    },
    { table },
  );
  return { ...base, ...job };
}

/** `promise`, or a failure naming `what` once `ms` passed: a hung attempt fails the test rather than holding it. */
async function within<T>(what: string, ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs job `name` of `config` in the foreground, expecting it to fail; checks what every failure must leave behind
 * (target as before, report job deleted, the attempt recorded failed, nothing `running`).
 * @returns the error and the recorded etl.attempts and etl.run_errors rows
 */
async function failingRun(config: EtlConfig, name: string, sim: Simulator = h.sim) {
  const before = await snapshot();
  const attempt = h.run(config, name);
  const failed = await within('the attempt to end', OUTCOME_WAIT_MS, attemptFailure(attempt));
  const recorded = (await h.pool.query('SELECT * FROM etl.attempts WHERE attempt_id = $1', [failed.attemptId])).rows[0];
  const errors = (await h.pool.query('SELECT * FROM etl.run_errors WHERE attempt_id = $1', [failed.attemptId])).rows;
  expect(await snapshot()).toBe(before);
  expect(sim.counters().openJobs).toEqual([]);
  expect(recorded.status).toBe('failed');
  expect((await attemptsOf(h.pool, name)).filter((r) => r.status === 'running')).toEqual([]);
  expect(errors).toHaveLength(1);
  return { err: failed, error: errors[0] };
}

it(
  'a page that trickles (one byte every 2 s) fails at its pageTimeoutMs with PAGE_TIMEOUT, ' +
    "the job's own over its connection's",
  async () => {
    const name = `${jp}_trickle`;
    // Page 2 is asked for ahead, while page 1 is read: its deadline counts from when page 1 was done.
    const config = h.config(
      { [name]: ordersJob({ parameters: { SIM_FAULT: 'trickle', SIM_FAULT_PAGE: '2' } }, { pageTimeoutMs: 1_500 }) },
      { pageTimeoutMs: 3_600_000 },
    );
    h.sim.resetCounters();
    const { err, error } = await failingRun(config, name);
    expect(err.code).toBe('PAGE_TIMEOUT');
    expect(err.retryable).toBe(true);
    expect(error).toMatchObject({
      stage: 'fetch',
      error_kind: 'PAGE_TIMEOUT',
      retryable: true,
      details: { page: 2, limitMs: 1_500, answered: true },
    });
    expect(error.details.bytes).toBeGreaterThan(0);
    expect(err.message).toMatch(
      /^page 2 of report job [0-9a-f-]{36} was not read within pageTimeoutMs \(1500 ms\): \d+ bytes of it had arrived/,
    );
    expect(err.message).toContain('raise pageTimeoutMs in jobs.yaml');
    // Page 3 was asked for ahead once page 2 answered, and nothing after it: reading stopped at page 2.
    expect(h.sim.counters().requests.output).toBe(3);
  },
);

it(
  'a report job that renders past maxRunMs fails at stage poll with RUN_TIMEOUT, ' + 'and its report job is deleted',
  async () => {
    const slow = await startSimulator({ jobDurationMs: 600_000 });
    extra.sims.push(slow);
    const name = `${jp}_slow_render`;
    const config = h.config({ [name]: ordersJob() }, { baseUrl: slow.url, maxRunMs: 1_500 });
    const { err, error } = await failingRun(config, name, slow);
    expect(err.code).toBe('RUN_TIMEOUT');
    expect(error).toMatchObject({
      stage: 'poll',
      error_kind: 'RUN_TIMEOUT',
      retryable: true,
      details: { limitMs: 1_500, pages: 0 },
    });
    expect(err.message).toContain(
      'did not commit within maxRunMs (1500 ms) of its start: it was at stage poll, no page had been read',
    );
    expect(err.message).toContain('raise maxRunMs in jobs.yaml');
    expect(slow.counters().jobsDeleted).toBe(1);
  },
);

it('an attempt whose pages trickle past maxRunMs fails with RUN_TIMEOUT, the load rolled back', async () => {
  const name = `${jp}_run_timeout`;
  const config = h.config({
    [name]: ordersJob(
      { outputType: 'txt', parameters: { SIM_FAULT: 'trickle', SIM_FAULT_PAGE: '3' } },
      // Time for PostgreSQL to take pages 1 and 2 whole on a busy machine before the deadline: then it waits for rows.
      { maxRunMs: 4_000 },
    ),
  });
  const { err, error } = await failingRun(config, name);
  expect(err.code).toBe('RUN_TIMEOUT');
  expect(error).toMatchObject({
    stage: 'load',
    error_kind: 'RUN_TIMEOUT',
    retryable: true,
    details: { limitMs: 4_000 },
  });
  expect(err.message).toMatch(/it was at stage load, 2 pages had been read completely \(\d+ bytes had arrived\)/);
  // COPY waited for this process's rows, not PostgreSQL for anything: the abort ended it, no statement was cancelled.
  expect(error.details.cancelledStatement).toBeUndefined();
  expect(err.message).toContain('a report slow to render, or pages slow to arrive');
});

it(
  'a load waiting past maxRunMs for a lock another session holds fails with ' +
    'RUN_TIMEOUT: its statement is cancelled',
  async () => {
    const name = `${jp}_locked`;
    const config = h.config({ [name]: ordersJob({}, { maxRunMs: 3_000 }) });
    const before = await snapshot();
    // A session that keeps the target locked (a migration, a long ALTER): the load's first statement on it waits.
    const blocker = await h.pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
      const { rows: held } = await blocker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const attempt = h.run(config, name);
      // The attempt ends while the lock is still held: it does not wait for the other session.
      const failed = await within(
        'the attempt to end while the lock is held',
        OUTCOME_WAIT_MS,
        attemptFailure(attempt),
      );
      expect(failed.code).toBe('RUN_TIMEOUT');
      const errors = (await h.pool.query('SELECT * FROM etl.run_errors WHERE attempt_id = $1', [failed.attemptId]))
        .rows;
      expect(errors).toMatchObject([
        {
          stage: 'load',
          error_kind: 'RUN_TIMEOUT',
          retryable: true,
          details: {
            limitMs: 3_000,
            cancelledStatement: { by: 'cancel', waitEventType: 'Lock', waitEvent: 'relation', relation: table },
          },
        },
      ]);
      // On-call reads what held it, not "a report slow to render".
      expect(failed.message).toContain(
        `PostgreSQL was still running a statement of the load, waiting for a lock on ${table} (relation) held by ` +
          `pid ${held[0]!.pid} (report-etl, idle in transaction), and it was cancelled`,
      );
      expect(failed.message).toContain('Check what holds locks on the target');
      expect(failed.message).not.toContain('slow to render');
      const { rows: waiting } = await h.pool.query(
        'SELECT count(*)::int AS n FROM pg_locks WHERE relation = $1::regclass AND NOT granted',
        [table],
      );
      expect(waiting[0].n).toBe(0);
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    expect(await snapshot()).toBe(before);
    expect(h.sim.counters().openJobs).toEqual([]);
    expect((await attemptsOf(h.pool, name)).filter((r) => r.status === 'running')).toEqual([]);
  },
);

it('a server that serves pages past pages= without end fails at page pages+1 with PAGE_COUNT_MISMATCH', async () => {
  for (const outputType of ['json', 'txt_all']) {
    const name = `${jp}_endless_${outputType}`;
    // txt_all loads lines (page, line, fields), into a table of its own; its pages are checked against pages= alone.
    const target = outputType === 'txt_all' ? { target: { table: `${h.schema}.lines` } } : {};
    const config = h.config({ [name]: ordersJob({ outputType, parameters: { SIM_FAULT: 'endless-pages' } }, target) });
    h.sim.resetCounters();
    const { err, error } = await failingRun(config, name);
    expect(err.code, outputType).toBe('PAGE_COUNT_MISMATCH');
    expect(error).toMatchObject({ stage: 'load', retryable: true, details: { expected: 5, loaded: 5, page: 6 } });
    expect(err.message).toBe(
      'page count mismatch: the server reported pages=5, but answered page 6 too (past the last page it answers ' +
        '404); reading stopped there and nothing was committed',
    );
    // Pages 1-6 and not one more.
    expect(h.sim.counters().requests.output).toBe(6);
  }
});

it('rows past rows= fail with ROW_COUNT_MISMATCH as the first of them arrives, within the last page', async () => {
  for (const outputType of ['json', 'txt', 'xml_query']) {
    const name = `${jp}_extra_row_${outputType}`;
    // rows=449;pages=5, while page 5 holds rows 401-450.
    const config = h.config({ [name]: ordersJob({ outputType, parameters: { SIM_FAULT: 'extra-row' } }) });
    const { err, error } = await failingRun(config, name);
    expect(err.code, outputType).toBe('ROW_COUNT_MISMATCH');
    expect(error, outputType).toMatchObject({
      stage: 'load',
      retryable: true,
      details: { expected: 449, loaded: 450, page: 5 },
    });
    expect(err.message).toBe(
      'row count mismatch: the server reported rows=449, but 450 rows had arrived by page 5; ' +
        'reading stopped there and nothing was committed',
    );
  }
});

it('rows past rows= stop the reading in the page that brings them, not at the end', async () => {
  const name = `${jp}_misreport`;
  // The server claims 390 rows (pages=4) and serves 450: row 391 comes in page 4; page 5 is never read.
  h.sim.setFaults({ misreportRows: -60 });
  try {
    const config = h.config({ [name]: ordersJob() });
    h.sim.resetCounters();
    const { err, error } = await failingRun(config, name);
    expect(err.code).toBe('ROW_COUNT_MISMATCH');
    expect(error.details).toMatchObject({ expected: 390, page: 4 });
    expect(error.details.loaded).toBeGreaterThan(390);
    expect(error.details.loaded).toBeLessThanOrEqual(400);
    expect(h.sim.counters().pagesServed).toBeLessThanOrEqual(5);
    expect(h.sim.counters().requests.output).toBeLessThanOrEqual(5);
  } finally {
    h.sim.setFaults({});
  }
});

it(
  "in a worker, a page that trickles frees the run's concurrency and its report " + 'slot: the next run goes through',
  async () => {
    extra.prefix = uniqueName('qd');
    extra.queue = makeQueue(h.redis, extra.prefix);
    const stuck = `${jp}_w_trickle`;
    const next = `${jp}_w_next`;
    const config = h.config(
      {
        [stuck]: {
          ...ordersJob({ parameters: { SIM_FAULT: 'trickle', SIM_FAULT_PAGE: '1' } }),
          pageTimeoutMs: 1_000,
          retry: { attempts: 1, backoffMs: 0 },
        },
        [next]: jobEntry(
          { name: 'Stock/Levels', outputType: 'txt', parameters: { ROWS: '20' } },
          { table: `${h.schema}.stock_next` },
        ),
      },
      { maxConcurrentReports: 1 },
    );
    // One run at a time, one report job at a time on the connection.
    extra.workers.push(workerOf(h, config, { prefix: extra.prefix, concurrency: 1 }));
    const before = await snapshot();
    const a = await enqueueManual(extra.queue, config, stuck);
    const b = await enqueueManual(extra.queue, config, next);
    await waitForQueueJob(extra.queue!, a.jobId, 'failed', 'the trickling run to fail for good', OUTCOME_WAIT_MS);
    await waitForQueueJob(extra.queue!, b.jobId, 'completed', 'the next run to succeed', OUTCOME_WAIT_MS);
    expect((await attemptsOf(h.pool, stuck)).map((r) => r.status)).toEqual(['failed']);
    expect(
      (
        await h.pool.query(
          'SELECT error_kind FROM etl.run_errors e JOIN etl.attempts a USING (attempt_id) WHERE a.job = $1',
          [stuck],
        )
      ).rows,
    ).toEqual([{ error_kind: 'PAGE_TIMEOUT' }]);
    expect((await attemptsOf(h.pool, next)).map((r) => r.status)).toEqual(['succeeded']);
    expect(await snapshot()).toBe(before);
    await waitFor('every report job deleted', () => h.sim.counters().openJobs.length === 0);
    const slots = new ReportSlots(h.redis, { prefix: extra.prefix });
    try {
      expect((await slots.usage('sim')).held).toBe(0);
    } finally {
      await slots.close();
    }
  },
);
