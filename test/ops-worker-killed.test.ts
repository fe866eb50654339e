/**
 * A worker killed with kill -9 mid-load (on-call, or the OOM killer): the janitor of the next worker closes the dead
 * attempt at the time its process was last heard of, and hands the run's queue job back at once, so the run goes on
 * in that worker without waiting for BullMQ's stalled-job check and without using up a retry. Real child processes,
 * real SIGKILL, the simulator over HTTP; the times from the kill are printed.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/simulator/index.ts';
import { enqueueManual } from '../src/queue/manual-run.ts';
import { makeQueue, type RunQueue } from '../src/queue/queue.ts';
import { configSchema } from '../src/config/schema.ts';
import { randomUUID } from 'node:crypto';
import { silentLogger } from '../src/logger.ts';
import { failAttempt, insertAttempt } from '../src/history/attempts.ts';
import { replayRun } from '../src/queue/replay.ts';
import { openAttemptOwner } from '../src/history/attempt-owner.ts';
import { uniqueName } from './support/env.ts';
import { startHarness, type Harness } from './support/harness.ts';
import {
  attemptsOf,
  closeQueueBench,
  deleteRuns,
  janitorOf,
  runsOf,
  waitFor,
  waitForQueueJob,
} from './support/queue-env.ts';
import { killHard, startCli, type CliProcess } from './support/cli-process.ts';
import { simConnectionLines } from './support/cli.ts';

let h: Harness;
let sim: Simulator;
let configPath: string;
let queue: RunQueue;
const jp = uniqueName('kill');
const prefix = uniqueName('killq');
const children: CliProcess[] = [];
const env = () => ({ SIM_URL: sim.url, SIM_SECRET: 'demo-secret', REPORT_ETL_QUEUE_PREFIX: prefix });

beforeAll(async () => {
  h = await startHarness();
  // Each response 150 ms late: 60 pages load in some 10 s, so the kill lands mid-load.
  sim = await startSimulator({ jobDurationMs: 50, faults: { latencyMs: 150 } });
  const dir = await mkdtemp(join(tmpdir(), 'report-etl-killed-'));
  configPath = join(dir, 'jobs.yaml');
  await writeFile(
    configPath,
    `${simConnectionLines('${SIM_URL}', 'SIM_SECRET', { pollIntervalMs: 50, pollMaxIntervalMs: 200 }).join('\n')}
  ${jp}_load:
    connection: sim
    report: { mandant: 7777, name: Sales/Orders, paging: 100, parameters: { ROWS: "6000" } }
    target: { table: ${h.schema}.killed }
`,
  );
  queue = makeQueue(h.redis, prefix);
}, 60_000);

afterAll(async () => {
  for (const c of children) c.child.kill('SIGKILL');
  await queue?.obliterate({ force: true }).catch(() => undefined);
  await sim?.close();
  await closeQueueBench(h, queue, prefix, jp);
});

/** The lines of a process's log (JSON on stderr) whose message matches `msg`, parsed. */
function logLines(p: CliProcess, msg: RegExp): { time: number; msg: string }[] {
  return p
    .stderr()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { time: number; msg: string })
    .filter((l) => msg.test(l.msg));
}

/** Waits until attempt `n` of `job` is loading, its progress recorded past page 3. */
async function loading(job: string, n: number): Promise<{ attempt_id: string; report_job_id: string }> {
  return waitFor(
    `attempt ${n} loading, its progress recorded past page 3`,
    async () => {
      const { rows } = await h.pool.query<{ attempt_id: string; report_job_id: string }>(
        `SELECT attempt_id, report_job_id FROM etl.attempts
          WHERE job = $1 AND attempt = $2 AND status = 'running' AND (progress->>'page')::int >= 3`,
        [job, n],
      );
      return rows[0];
    },
    60_000,
  );
}

/** Starts `report-etl worker` and waits until it runs. */
async function startWorker(): Promise<CliProcess> {
  const w = startCli(['worker', '-c', configPath], env());
  children.push(w);
  await waitFor('the worker running', () => w.stdout().includes('running'));
  return w;
}

/** Waits until attempt `n` of `job` succeeded; gives its run's attempts. */
function succeeded(job: string, n: number, timeoutMs = 120_000, intervalMs = 100) {
  return waitFor(
    `attempt ${n} succeeded`,
    async () => {
      const rows = await attemptsOf(h.pool, job);
      return rows[n - 1]?.status === 'succeeded' && rows;
    },
    timeoutMs,
    intervalMs,
  );
}

/** Queues a manual run of `job` with the default retry (3 attempts, 30 s backoff doubling); its queue job id. */
async function enqueue(job: string): Promise<string> {
  const config = configSchema.parse({
    connections: { sim: { baseUrl: sim.url, clientId: 'demo-client', clientSecret: 'x' } },
    jobs: {
      [job]: {
        connection: 'sim',
        report: { mandant: 7777, name: 'Sales/Orders' },
        target: { table: `${h.schema}.killed` },
      },
    },
  });
  return (await enqueueManual(queue, config, job)).jobId;
}

it(
  'a worker killed -9 mid-load: the next worker closes the attempt as of its last progress and runs the ' +
    'run again at once, from the same queue job, without a retry or a stall',
  async () => {
    const job = `${jp}_load`;
    const first = await startWorker();
    // A retry would show in the queue job's attemptsMade.
    const jobId = await enqueue(job);
    const dead = await loading(job, 1);
    await killHard(first);
    const killedAt = Date.now();
    expect(sim.counters().openJobs).toContain(dead.report_job_id);
    // BullMQ still has the queue job active, under the dead worker's lock.
    expect(await (await queue.getJob(jobId))!.getState()).toBe('active');
    const second = startCli(['worker', '-c', configPath], env());
    children.push(second);
    const done = await succeeded(job, 2);
    const [closed, again] = done;
    // (a) The dead attempt: interrupted as an orphan, its report job deleted, its end when it was last heard of.
    const { rows: dead1 } = await h.pool.query<{
      status: string;
      finished_at: Date;
      duration_ms: string;
      started_at: Date;
      progress: { at: string };
    }>('SELECT status, finished_at, duration_ms, started_at, progress FROM etl.attempts WHERE attempt_id = $1', [
      dead.attempt_id,
    ]);
    const d = dead1[0]!;
    expect(closed!.attempt_id).toBe(dead.attempt_id);
    expect(d.status).toBe('interrupted');
    expect(closed!.error).toMatch(/^orphaned: the process that ran attempt 1 /);
    expect(d.finished_at.getTime()).toBe(new Date(d.progress.at).getTime());
    expect(d.finished_at.getTime()).toBeLessThanOrEqual(killedAt);
    // PostgreSQL keeps microseconds, a Date milliseconds: the two differ by less than one.
    expect(Math.abs(Number(d.duration_ms) - (d.finished_at.getTime() - d.started_at.getTime()))).toBeLessThanOrEqual(1);
    const { rows: errors } = await h.pool.query<{ error_kind: string; details: { noticedAt: string } }>(
      'SELECT error_kind, details FROM etl.run_errors WHERE attempt_id = $1',
      [dead.attempt_id],
    );
    expect(errors.map((e) => e.error_kind)).toEqual(['ORPHANED']);
    expect(new Date(errors[0]!.details.noticedAt).getTime()).toBeGreaterThanOrEqual(killedAt);
    // (b) The run went on from the same queue job, handed back by the janitor: no stall, no retry used.
    expect(again!.attempt).toBe(2);
    expect(again!.started_at.getTime()).toBeGreaterThanOrEqual(d.finished_at.getTime());
    const handedBack = logLines(second, /handed back to the queue/);
    expect(handedBack).toHaveLength(1);
    expect(logLines(second, /^run stalled/)).toEqual([]);
    // The worker completes the queue job a moment after the attempt's commit.
    const queued = await waitForQueueJob(queue, jobId, 'completed');
    // BullMQ counts the finish that completed it; a retry (backoff) would have made it 2.
    expect(queued.attemptsMade).toBe(1);
    expect(queued.stalledCounter).toBe(0);
    // One attempt at a time, nothing committed twice, no report job left on the server.
    const runs = await runsOf(h.pool, job);
    expect(runs.map((r) => [r.attempts, r.status, r.rows])).toEqual([[2, 'succeeded', '6000']]);
    const { rows: n } = await h.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${h.schema}.killed`);
    expect(n[0]!.n).toBe(6000);
    expect(sim.counters().openJobs).toEqual([]);
    const orphanClosed = logLines(second, /^orphaned attempt closed/)[0]!;
    console.log(
      `[measured] worker killed -9 mid-load: dead attempt closed ${orphanClosed.time - killedAt} ms after the ` +
        `kill (the new worker's first sweep), run handed back ${handedBack[0]!.time - killedAt} ms after, next ` +
        `attempt started ${again!.started_at.getTime() - killedAt} ms after; dead attempt's duration ` +
        `${d.duration_ms} ms (until its last progress, ${killedAt - d.finished_at.getTime()} ms before the kill)`,
    );
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  },
  240_000,
);

it(
  "a worker killed -9 beside an idle one: the idle worker's orphan check, between its sweeps, closes the attempt " +
    'and takes the run before BullMQ would call it stalled',
  async () => {
    const job = `${jp}_load`;
    await deleteRuns(h.pool, jp);
    await h.pool.query(`TRUNCATE ${h.schema}.killed`);
    const first = await startWorker();
    const jobId = await enqueue(job);
    await loading(job, 1);
    // Started before the kill: its first sweep finds nothing, a later orphan check does.
    const idle = await startWorker();
    await waitFor('the idle worker ready', () => idle.stderr().includes('worker ready'));
    await killHard(first);
    const killedAt = Date.now();
    const done = await succeeded(job, 2);
    expect(done.map((a) => [a.attempt, a.status])).toEqual([
      [1, 'interrupted'],
      [2, 'succeeded'],
    ]);
    const closedLine = logLines(idle, /^orphaned attempt closed/);
    const handedBack = logLines(idle, /handed back to the queue/);
    expect(closedLine).toHaveLength(1);
    expect(handedBack).toHaveLength(1);
    expect(logLines(idle, /^run stalled/)).toEqual([]);
    const queued = await waitForQueueJob(queue, jobId, 'completed');
    expect(queued.stalledCounter).toBe(0);
    console.log(
      `[measured] worker killed -9 beside an idle worker: dead attempt closed and run handed back ` +
        `${handedBack[0]!.time - killedAt} ms after the kill, next attempt started ` +
        `${done[1]!.started_at.getTime() - killedAt} ms after`,
    );
    idle.child.kill('SIGTERM');
    expect(await idle.exited).toBe(0);
  },
  240_000,
);

it(
  'a run that killed its worker three times: the first two are handed back at once, the third waits for ' +
    "BullMQ's stalled-job check, whose maxStalledCount bounds a run that kills every worker",
  async () => {
    const job = `${jp}_load`;
    await deleteRuns(h.pool, jp);
    await h.pool.query(`TRUNCATE ${h.schema}.killed`);
    let worker = await startWorker();
    const jobId = await enqueue(job);
    for (const n of [1, 2, 3]) {
      await loading(job, n);
      await killHard(worker);
      worker = await startWorker();
    }
    const done = await succeeded(job, 4, 180_000, 200);
    expect(done.map((a) => [a.attempt, a.status])).toEqual([
      [1, 'interrupted'],
      [2, 'interrupted'],
      [3, 'interrupted'],
      [4, 'succeeded'],
    ]);
    // The last worker closed attempt 3 but left its queue job to the stalled-job check, which counted it.
    expect(logLines(worker, /^orphaned attempt closed/)).toHaveLength(1);
    expect(logLines(worker, /handed back to the queue/)).toEqual([]);
    expect(logLines(worker, /^run stalled/)).toHaveLength(1);
    const queued = await waitForQueueJob(queue, jobId, 'completed');
    expect(queued.stalledCounter).toBe(1);
    expect(queued.attemptsMade).toBe(1);
    const { rows: n } = await h.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${h.schema}.killed`);
    expect(n[0]!.n).toBe(6000);
    expect(sim.counters().openJobs).toEqual([]);
  },
  300_000,
);

it("a replay's worker killed -9 mid-load: the replay's queue job is handed back at once", async () => {
  const job = `${jp}_load`;
  // The workers of the tests before have nothing left to do: none of them may take the replay.
  for (const c of children) c.child.kill('SIGKILL');
  await deleteRuns(h.pool, jp);
  await h.pool.query(`DROP TABLE IF EXISTS ${h.schema}.killed`);
  // A run queued once (its first queue job done with), whose attempt failed: on-call replays it.
  const runKey = uniqueName('replayed');
  const failedId = randomUUID();
  const base = { job, runKey, trigger: 'manual' as const, targetTable: `${h.schema}.killed`, writeMode: 'replace' };
  await insertAttempt(h.pool, { ...base, attemptId: failedId, worker: 'gone:1' });
  await failAttempt(h.pool, failedId, {
    status: 'failed',
    stage: 'poll',
    errorKind: 'REPORT_FAILED',
    retryable: false,
    message: 'report job failed',
  });
  await h.pool.query('UPDATE etl.runs SET queue_job_id = $3 WHERE job = $1 AND run_key = $2', [
    job,
    runKey,
    `manual__${randomUUID()}`,
  ]);
  const config = configSchema.parse({
    connections: { sim: { baseUrl: sim.url, clientId: 'demo-client', clientSecret: 'x' } },
    jobs: { [job]: { connection: 'sim', report: { mandant: 7777, name: 'Sales/Orders' }, target: { table: 'x.y' } } },
  });
  const first = await startWorker();
  const { jobId } = await replayRun({ queue, pool: h.pool, config }, { job, runKey });
  await loading(job, 2);
  await killHard(first);
  const second = await startWorker();
  const done = await succeeded(job, 3);
  expect(done.map((a) => [a.attempt, a.status])).toEqual([
    [1, 'failed'],
    [2, 'interrupted'],
    [3, 'succeeded'],
  ]);
  const handedBack = logLines(second, /handed back to the queue/);
  expect(handedBack).toHaveLength(1);
  expect(logLines(second, /^run stalled/)).toEqual([]);
  const queued = await waitForQueueJob(queue, jobId, 'completed');
  expect(queued.stalledCounter).toBe(0);
  second.child.kill('SIGTERM');
  expect(await second.exited).toBe(0);
}, 240_000);

it(
  'an attempt whose process died before its first page (no progress): recorded finished when an orphan check ' +
    'last found its owner alive, not when the death was noticed',
  async () => {
    const job = `${jp}_load`;
    await deleteRuns(h.pool, jp);
    const config = configSchema.parse({
      connections: { sim: { baseUrl: sim.url, clientId: 'demo-client', clientSecret: 'x' } },
      jobs: { [job]: { connection: 'sim', report: { mandant: 7777, name: 'Sales/Orders' }, target: { table: 'x.y' } } },
    });
    const janitor = janitorOf(h, config, { prefix });
    // A process's owner session, and its attempt just started: nothing recorded but its start.
    const owner = await openAttemptOwner(h.pool, silentLogger);
    const attemptId = randomUUID();
    const base = { job, runKey: randomUUID(), trigger: 'manual' as const, targetTable: 'x.y', writeMode: 'replace' };
    await insertAttempt(h.pool, { ...base, attemptId, worker: 'elsewhere:1', ownerLock: owner.key });
    try {
      const before = new Date();
      expect(await janitor.closeOrphans([job])).toEqual([]);
      const after = new Date();
      // The process dies: its session ends, its lock is free.
      await owner.close();
      const closed = await janitor.closeOrphans([job]);
      expect(closed.map((c) => [c.attemptId, c.closed])).toEqual([[attemptId, true]]);
      const { rows } = await h.pool.query<{ status: string; started_at: Date; finished_at: Date }>(
        'SELECT status, started_at, finished_at FROM etl.attempts WHERE attempt_id = $1',
        [attemptId],
      );
      expect(rows[0]!.status).toBe('interrupted');
      // The first check found it alive: its end is that check, before the second one noticed the death.
      expect(rows[0]!.finished_at.getTime()).toBeGreaterThanOrEqual(before.getTime());
      expect(rows[0]!.finished_at.getTime()).toBeLessThanOrEqual(after.getTime());
      expect(rows[0]!.finished_at.getTime()).toBeGreaterThan(rows[0]!.started_at.getTime());
    } finally {
      await owner.close();
      await janitor.close();
    }
  },
  60_000,
);
