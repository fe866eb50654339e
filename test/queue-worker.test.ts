/**
 * The worker's failure handling: kill -9 mid-run recovered by a new attempt that
 * deletes the dead attempt's report job; graceful shutdown; non-retryable failures fail at once; a failed run
 * replayed after the fault is gone; overlap prevention across workers; a run whose overlap lock is lost mid-load.
 */
import { spawn } from 'node:child_process';
import { afterAll, afterEach, expect, it } from 'vitest';
import { readProgress } from '../src/history/attempt-progress.ts';
import { enqueueManual } from '../src/queue/manual-run.ts';
import { overlapLockKey } from '../src/queue/names.ts';
import { planFailedReplays, replayRun } from '../src/queue/replay.ts';
import type { RunWorker, RunWorkerDeps } from '../src/queue/worker.ts';
import { DATABASE_URL, REDIS_URL, uniqueName } from './support/env.ts';
import { jobEntry, loadedRows, servedRows, type Harness } from './support/harness.ts';
import {
  attemptsOf,
  deleteKeys,
  runsOf,
  useQueueBench,
  waitFor,
  waitForQueueJob,
  workerOf,
} from './support/queue-env.ts';

const prefix = uniqueName('qw');
const jp = uniqueName('jw');
// Report jobs stay Running 1.5 s: long enough to kill or stop a worker mid-run.
const { h, queue } = useQueueBench(prefix, jp, { jobDurationMs: 1_500 });
const workers: RunWorker[] = [];

// A test that failed midway leaves its workers running; they must not take the next test's runs.
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.close(0)));
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.close(0)));
});

function startWorker(config: () => ReturnType<Harness['config']>, extra: Partial<RunWorkerDeps> = {}): RunWorker {
  const w = workerOf(h, config, {
    prefix,
    overlapRetryMs: 100,
    lockDurationMs: 1_000,
    stalledIntervalMs: 500,
    ...extra,
  });
  workers.push(w);
  return w;
}

async function stop(w: RunWorker, graceMs = 0): Promise<void> {
  await w.close(graceMs);
  workers.splice(workers.indexOf(w), 1);
}

/** Full content fingerprint of a table. */
async function snapshot(table: string): Promise<string> {
  const { rows } = await h.pool.query(
    `SELECT count(*)::int AS n, md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) AS m FROM ${table} t`,
  );
  return `${rows[0].n}:${rows[0].m}`;
}

it('kill -9 mid-run: the run is picked up as stalled, the dead report job deleted, the target intact', async () => {
  const job = `${jp}_kill`;
  const table = `${h.schema}.orders_kill`;
  const config = h.config({
    [job]: jobEntry({ name: 'Sales/Orders', paging: 500, parameters: { ROWS: '1200' } }, { table }),
  });
  await h.pool.query(`CREATE TABLE ${table} (auftrag_nr bigint, kunde text)`);
  await h.pool.query(`INSERT INTO ${table} VALUES (1, 'before')`);
  const before = await snapshot(table);
  const child = spawn(process.execPath, ['test/fixtures/queue-worker-child.ts'], {
    env: { ...process.env, CHILD_CONFIG: JSON.stringify(config), CHILD_PREFIX: prefix, DATABASE_URL, REDIS_URL },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await waitFor(
    'child ready',
    () =>
      new Promise<boolean>((resolve) =>
        child.stdout!.once('data', (d: Buffer) => resolve(d.toString().includes('ready'))),
      ),
  );
  const { jobId, runKey } = await enqueueManual(queue, config, job, { ROWS: '900' });
  const dead = await waitFor('the child started the report job', async () =>
    (await attemptsOf(h.pool, job)).find((r) => r.report_job_id !== null),
  );
  expect(h.sim.counters().openJobs).toContain(dead.report_job_id);
  child.kill('SIGKILL');
  await exited;
  expect(await snapshot(table)).toBe(before);
  startWorker(() => config);
  const done = await waitFor('a new attempt succeeded', async () =>
    (await attemptsOf(h.pool, job)).find((r) => r.status === 'succeeded'),
  );
  const runs = await attemptsOf(h.pool, job);
  expect(runs).toHaveLength(2);
  const old = runs.find((r) => r.attempt_id === dead.attempt_id)!;
  expect(old.status).toBe('interrupted');
  expect(old.error).toContain(`report job ${dead.report_job_id} was deleted`);
  // The new attempt counts on from the dead one (BullMQ's attemptsMade does not count a stall).
  expect([old.attempt, done.attempt]).toEqual([1, 2]);
  expect(done.run_key).toBe(runKey);
  expect(done.trigger).toBe('manual');
  expect(Number(done.rows)).toBe(900);
  // The report job is deleted right after the commit that made the attempt `succeeded`.
  await waitFor('every report job deleted', () => h.sim.counters().openJobs.length === 0);
  expect(await loadedRows(h.pool, table, 'Sales/Orders.avw', { ROWS: '900' })).toEqual(
    servedRows('Sales/Orders.avw', { ROWS: '900' }, 1),
  );
  // The attempt records its timeline after the DELETE, then the queue job completes.
  await waitForQueueJob(queue, jobId, 'completed');
  await stop(workers[0]!);
});

it(
  'graceful shutdown: a run that ends within the grace period finishes; ' +
    'one that does not is aborted and queued again',
  async () => {
    const job = `${jp}_grace`;
    const table = `${h.schema}.stock_grace`;
    const config = h.config({ [job]: jobEntry({ name: 'Stock/Levels' }, { table }) });
    // 1) Finishes within the grace period.
    let w = startWorker(() => config);
    await enqueueManual(queue, config, job);
    await waitFor('run started', async () => (await attemptsOf(h.pool, job)).some((r) => r.report_job_id));
    await stop(w, 10_000);
    let runs = await attemptsOf(h.pool, job);
    expect(runs.map((r) => r.status)).toEqual(['succeeded']);
    // 2) Grace period over: aborted, rolled back, report job deleted, recorded interrupted, queued again without using
    //    an attempt.
    w = startWorker(() => config);
    const { jobId } = await enqueueManual(queue, config, job);
    await waitFor(
      'second run started',
      async () => (await attemptsOf(h.pool, job)).filter((r) => r.report_job_id).length === 2,
    );
    // A grace period far shorter than the run: the run is aborted, not waited for.
    await stop(w, 200);
    runs = await attemptsOf(h.pool, job);
    expect(runs[1]!.status).toBe('interrupted');
    expect(h.sim.counters().openJobs).toEqual([]);
    const queued = await queue.getJob(jobId);
    expect(['delayed', 'waiting']).toContain(await queued!.getState());
    expect(queued!.attemptsMade).toBe(0);
    // Another worker takes it.
    startWorker(() => config);
    await waitFor(
      'requeued run succeeded',
      async () => (await attemptsOf(h.pool, job)).filter((r) => r.status === 'succeeded').length === 2,
    );
    await stop(workers[0]!);
  },
);

it(
  'a non-retryable failure fails at once; a retryable one uses its attempts; ' + 'replay after the fault is gone',
  async () => {
    const job = `${jp}_fail`;
    const table = `${h.schema}.stock_fail`;
    const config = h.config({
      [job]: {
        ...jobEntry({ name: 'Stock/Levels' }, { table, mode: 'append' }),
        retry: { attempts: 2, backoffMs: 50 },
      },
      [`${job}_forbidden`]: {
        ...jobEntry({ name: 'Failing' }, { table: `${h.schema}.never` }),
        retry: { attempts: 3, backoffMs: 50 },
      },
    });
    const worker = startWorker(() => config);
    // FinishedError of the report: not retryable, one attempt only although 3 are allowed.
    const bad = await enqueueManual(queue, config, `${job}_forbidden`);
    await waitForQueueJob(queue, bad.jobId, 'failed', 'failed for good');
    expect((await attemptsOf(h.pool, `${job}_forbidden`)).map((r) => [r.status, r.attempt])).toEqual([['failed', 1]]);
    expect((await queue.getJob(bad.jobId))?.failedReason).toMatch(/^REPORT_FAILED: /);
    // Every report API call answers 503: both attempts fail.
    h.sim.setFaults({ errorRate: 1 });
    const enqueuedAt = Date.now();
    const { jobId, runKey } = await enqueueManual(queue, config, job);
    await waitForQueueJob(queue, jobId, 'failed', 'failed after 2 attempts');
    h.sim.setFaults({});
    let runs = await attemptsOf(h.pool, job);
    expect(runs.map((r) => [r.status, r.attempt])).toEqual([
      ['failed', 1],
      ['failed', 2],
    ]);
    expect(await runsOf(h.pool, job)).toMatchObject([
      { run_key: runKey, trigger: 'manual', attempts: 2, status: 'failed', rows: null },
    ]);
    // When the run was put on the queue (the queue job's timestamp), before a worker began it (created_at).
    const [queued] = await runsOf(h.pool, job);
    expect(queued!.queued_at!.getTime()).toBeGreaterThanOrEqual(enqueuedAt - 1_000);
    expect(queued!.queued_at!.getTime()).toBeLessThanOrEqual(queued!.created_at.getTime() + 1_000);
    // No worker takes the replay until it was asked for twice.
    await stop(worker);
    const ref = { job, runKey };
    const replay = await replayRun({ queue, pool: h.pool, config }, ref);
    // The replay's queue job names the run's newest failed attempt.
    expect(replay).toEqual({
      jobId: `${jobId}__replay_${runs[1]!.attempt_id}`,
      attemptId: runs[1]!.attempt_id,
      reverted: false,
    });
    // Replaying the run again before its replay made an attempt is deduplicated; --failed finds nothing pending once it
    // succeeded.
    expect((await replayRun({ queue, pool: h.pool, config }, ref)).jobId).toBe(replay.jobId);
    startWorker(() => config);
    await waitFor('replay succeeded', async () =>
      (await attemptsOf(h.pool, job)).some((r) => r.status === 'succeeded'),
    );
    runs = await attemptsOf(h.pool, job);
    expect(runs.map((r) => [r.status, r.trigger])).toEqual([
      ['failed', 'manual'],
      ['failed', 'manual'],
      ['succeeded', 'replay'],
    ]);
    expect(new Set(runs.map((r) => r.run_key))).toEqual(new Set([runKey]));
    expect(await loadedRows(h.pool, table, 'Stock/Levels.avw')).toEqual(servedRows('Stock/Levels.avw', {}, 1));
    // One logical run of three attempts; it stands as its newest attempt does, with that attempt's rows.
    expect(await runsOf(h.pool, job)).toMatchObject([
      { run_key: runKey, trigger: 'manual', attempts: 3, status: 'succeeded', rows: runs[2]!.rows },
    ]);
    // The logical run has succeeded: replaying it again is refused (the append ledger would make it add nothing
    // anyway; test/pipeline-load.test.ts shows that).
    await expect(replayRun({ queue, pool: h.pool, config }, ref)).rejects.toThrow(/succeeded: nothing to replay/);
    expect(await attemptsOf(h.pool, job)).toHaveLength(3);
    expect(await loadedRows(h.pool, table, 'Stock/Levels.avw')).toEqual(servedRows('Stock/Levels.avw', {}, 1));
    const toReplay = async (j: string) =>
      (await planFailedReplays({ queue, pool: h.pool, config }, { job: j })).toQueue;
    expect(await toReplay(job)).toEqual([]);
    // The report failure is still failed and is what --failed replays.
    expect(await toReplay(`${job}_forbidden`)).toHaveLength(1);
    await expect(replayRun({ queue, pool: h.pool }, { job, runKey: 'no-such-run' })).rejects.toThrow(
      /no run no-such-run of job/,
    );
    await waitFor('every report job deleted', () => h.sim.counters().openJobs.length === 0);
    await stop(workers[0]!);
  },
);

it('overlap: two workers never run one job at the same time (wait), or the second run is skipped (skip)', async () => {
  const wait = `${jp}_ov_wait`;
  const skip = `${jp}_ov_skip`;
  const config = h.config({
    [wait]: { ...jobEntry({ name: 'Stock/Levels' }, { table: `${h.schema}.ov_wait` }), overlap: 'wait' },
    [skip]: { ...jobEntry({ name: 'Stock/Levels' }, { table: `${h.schema}.ov_skip` }), overlap: 'skip' },
  });
  startWorker(() => config, { concurrency: 2 });
  startWorker(() => config, { concurrency: 2 });
  const waits = await Promise.all([
    enqueueManual(queue, config, wait),
    enqueueManual(queue, config, wait),
    enqueueManual(queue, config, wait),
  ]);
  await waitFor(
    '3 waiting runs done',
    async () => (await attemptsOf(h.pool, wait)).filter((r) => r.status === 'succeeded').length === 3,
  );
  const runs = await attemptsOf(h.pool, wait);
  for (let i = 1; i < runs.length; i++)
    expect(runs[i]!.started_at.getTime()).toBeGreaterThanOrEqual(runs[i - 1]!.finished_at!.getTime());
  expect(new Set(runs.map((r) => r.run_key))).toEqual(new Set(waits.map((x) => x.runKey)));
  // Recorded as queued by their enqueue: the skipped one's row goes, so that it never reads as lost.
  const skips = await Promise.all([
    enqueueManual(queue, config, skip, {}, undefined, undefined, h.pool),
    enqueueManual(queue, config, skip, {}, undefined, undefined, h.pool),
  ]);
  const results = await waitFor('both skip jobs finished', async () => {
    const js = await Promise.all(skips.map((s) => queue.getJob(s.jobId)));
    return js.every((j) => j?.finishedOn) ? js.map((j) => j!.returnvalue.status).sort() : undefined;
  });
  expect(results).toEqual(['skipped-overlap', 'succeeded']);
  expect((await attemptsOf(h.pool, skip)).map((r) => r.status)).toEqual(['succeeded']);
  const { rows: skipRuns } = await h.pool.query('SELECT attempts, status FROM etl.runs WHERE job = $1', [skip]);
  expect(skipRuns).toEqual([{ attempts: 1, status: 'succeeded' }]);
});

it('a run whose queue job vanished from Redis mid-run is failed for good with a clear text and alerted', async () => {
  const job = `${jp}_lost`;
  const table = `${h.schema}.orders_lost`;
  const config = h.config({
    [job]: { ...jobEntry({ name: 'Sales/Orders' }, { table }), retry: { attempts: 3, backoffMs: 50 } },
  });
  const failed: { runKey: string; error: Error }[] = [];
  startWorker(() => config, {
    alerts: { succeeded: async () => undefined, failed: async (o) => void failed.push(o) },
  });
  const { runKey } = await enqueueManual(queue, config, job);
  await waitFor('the report job to run', async () => (await attemptsOf(h.pool, job))[0]?.report_job_id);
  // Redis loses its data (a restart without persistence): the queue job and the overlap lock are gone.
  await deleteKeys(h.redis, prefix);
  await waitFor('the failed alert', () => failed.length === 1, 30_000);
  expect(failed[0]!.runKey).toBe(runKey);
  expect(failed[0]!.error.message).toMatch(/^not retried: its queue job .* is gone from Redis.*report-etl replay/s);
  const { rows } = await h.pool.query(
    `SELECT e.error_kind, e.retryable, e.message FROM etl.run_errors e JOIN etl.attempts a USING (attempt_id)
      WHERE a.job = $1 ORDER BY e.id`,
    [job],
  );
  expect(rows.map((r) => [r.error_kind, r.retryable])).toEqual([
    ['OVERLAP_LOCK_LOST', true],
    ['QUEUE_JOB_LOST', false],
  ]);
  // The attempt's own text (`runs`, `runs --attempts`) is the last word, not the first failure's "is retried".
  const { rows: attempt } = await h.pool.query<{ error: string }>('SELECT error FROM etl.attempts WHERE job = $1', [
    job,
  ]);
  expect(attempt[0]!.error).toMatch(/^not retried: its queue job \S+ is gone from Redis/);
  expect(attempt[0]!.error).toContain(`report-etl replay ${runKey} --job ${job}`);
  expect(attempt[0]!.error).toContain('the attempt had failed with OVERLAP_LOCK_LOST: the overlap lock');
  expect(await runsOf(h.pool, job)).toMatchObject([{ run_key: runKey, attempts: 1, status: 'failed' }]);
  expect(await h.pool.query(`SELECT to_regclass('${table}') AS t`)).toMatchObject({ rows: [{ t: null }] });
});

it('a run whose overlap lock is lost mid-load stops at once and is retried; its second attempt loads', async () => {
  const job = `${jp}_lock`;
  const table = `${h.schema}.orders_lock`;
  // 60 pages of at least 100 ms each.
  const config = h.config({
    [job]: {
      ...jobEntry({ name: 'Sales/Orders', paging: 100, parameters: { ROWS: '6000' } }, { table }),
      retry: { attempts: 2, backoffMs: 50 },
    },
  });
  // Renewed every 200 ms: a loss is found within that.
  startWorker(() => config, { overlapLockTtlMs: 600 });
  h.sim.setFaults({ latencyMs: 100 });
  try {
    const { jobId } = await enqueueManual(queue, config, job);
    await waitFor('two pages read', async () => {
      const progress = readProgress((await attemptsOf(h.pool, job))[0]?.progress);
      return (progress?.pagesRead ?? 0) >= 2;
    });
    // Redis loses the key (a restart without persistence, an eviction).
    await h.redis.del(overlapLockKey(prefix, job));
    const first = await waitFor('the first attempt failed', async () => {
      const a = (await attemptsOf(h.pool, job))[0];
      return a?.status === 'failed' ? a : undefined;
    });
    const stopped = readProgress(first.progress)!;
    expect(stopped.pages).toBe(60);
    expect(stopped.pagesRead).toBeLessThan(30);
    h.sim.setFaults({});
    const done = await waitFor('the queue job finished', async () => {
      const j = await queue.getJob(jobId);
      return j?.finishedOn ? j : undefined;
    });
    expect(done.returnvalue).toMatchObject({ status: 'succeeded', rows: 6000 });
    const { rows } = await h.pool.query(
      `SELECT a.attempt, a.status, e.error_kind, e.stage, e.retryable
         FROM etl.attempts a LEFT JOIN etl.run_errors e USING (attempt_id) WHERE a.job = $1 ORDER BY a.attempt`,
      [job],
    );
    expect(rows).toEqual([
      { attempt: 1, status: 'failed', error_kind: 'OVERLAP_LOCK_LOST', stage: 'load', retryable: true },
      { attempt: 2, status: 'succeeded', error_kind: null, stage: null, retryable: null },
    ]);
    expect(h.sim.counters().openJobs).toEqual([]);
  } finally {
    h.sim.setFaults({});
  }
});
