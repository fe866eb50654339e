/**
 * No orphans: report-etl processes killed with kill -9 at several stages leave no `running` row and no
 * open report job: the next `report-etl run` of the job closes them at once, and the janitor of any other
 * long-running process closes them within its orphan check interval. Real child processes, real SIGKILL, the simulator
 * over HTTP; the times from the kill to a closed row and a deleted report job are printed.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/simulator/index.ts';
import { enqueueManual } from '../src/queue/manual-run.ts';
import { makeQueue, type RunQueue } from '../src/queue/queue.ts';
import { configSchema } from '../src/config/schema.ts';
import { uniqueName } from './support/env.ts';
import { startHarness, type Harness } from './support/harness.ts';
import { attemptsOf, closeQueueBench, waitFor } from './support/queue-env.ts';
import { killHard, startCli, type CliProcess } from './support/cli-process.ts';

let h: Harness;
let slow: Simulator;
let paged: Simulator;
let configPath: string;
let queue: RunQueue;
const jp = uniqueName('orph');
const prefix = uniqueName('orphq');
const children: CliProcess[] = [];
const env = () => ({
  SLOW_URL: slow.url,
  PAGED_URL: paged.url,
  SIM_SECRET: 'demo-secret',
  REPORT_ETL_QUEUE_PREFIX: prefix,
});

beforeAll(async () => {
  h = await startHarness();
  // Report jobs of `slow` stay Running 6 s (a kill lands while polling); `paged` serves each response 150 ms late.
  slow = await startSimulator({ jobDurationMs: 6_000 });
  paged = await startSimulator({ jobDurationMs: 50, faults: { latencyMs: 150 } });
  const dir = await mkdtemp(join(tmpdir(), 'report-etl-orphans-'));
  configPath = join(dir, 'jobs.yaml');
  const conn = (v: string) =>
    `    baseUrl: \${${v}}\n    clientId: demo-client\n    clientSecret: ` +
    `\${SIM_SECRET}\n    pollIntervalMs: 50\n    pollMaxIntervalMs: 200\n`;
  await writeFile(
    configPath,
    `connections:
  slow:
${conn('SLOW_URL')}  paged:
${conn('PAGED_URL')}jobs:
  ${jp}_poll:
    connection: slow
    report: { mandant: 7777, name: Sales/Orders, paging: 100, parameters: { ROWS: "300" } }
    target: { table: ${h.schema}.poll }
  ${jp}_load:
    connection: paged
    report: { mandant: 7777, name: Sales/Orders, paging: 100, parameters: { ROWS: "3000" } }
    target: { table: ${h.schema}.load }
  ${jp}_worker:
    connection: slow
    report: { mandant: 7777, name: Sales/Orders, paging: 100, parameters: { ROWS: "300" } }
    target: { table: ${h.schema}.worker }
`,
  );
  queue = makeQueue(h.redis, prefix);
}, 60_000);

afterAll(async () => {
  for (const c of children) c.child.kill('SIGKILL');
  await queue?.obliterate({ force: true }).catch(() => undefined);
  await slow?.close();
  await paged?.close();
  await closeQueueBench(h, queue, prefix, jp);
});

async function snapshot(table: string): Promise<string> {
  const { rows } = await h.pool.query(
    `SELECT count(*)::int AS n, md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) AS m FROM ${table} t`,
  );
  return `${rows[0].n}:${rows[0].m}`;
}

/** Waits until the attempt is no longer running and its report job is gone from `sim`; returns ms since `t0`. */
async function closedAfter(
  sim: Simulator,
  attemptId: string,
  reportJobId: string,
  t0: number,
  timeoutMs?: number,
): Promise<number> {
  await waitFor(
    `attempt ${attemptId} closed and report job ${reportJobId} deleted`,
    async () => {
      const { rows } = await h.pool.query<{ status: string }>('SELECT status FROM etl.attempts WHERE attempt_id = $1', [
        attemptId,
      ]);
      return rows[0]?.status !== 'running' && !sim.counters().openJobs.includes(reportJobId);
    },
    timeoutMs,
    100,
  );
  return Date.now() - t0;
}

async function expectClosedAsOrphan(attemptId: string, reportJobId: string): Promise<void> {
  const { rows } = await h.pool.query<{ status: string; error: string }>(
    'SELECT status, error FROM etl.attempts WHERE attempt_id = $1',
    [attemptId],
  );
  expect(rows[0]!.status).toBe('interrupted');
  expect(rows[0]!.error).toMatch(/^orphaned: the process that ran attempt 1 \(.+\) ended without finishing it/);
  expect(rows[0]!.error).toContain(`deleted its report job ${reportJobId}`);
  const { rows: errors } = await h.pool.query<{ error_kind: string }>(
    'SELECT error_kind FROM etl.run_errors WHERE attempt_id = $1',
    [attemptId],
  );
  expect(errors.map((e) => e.error_kind)).toEqual(['ORPHANED']);
}

it(
  'report-etl run killed -9 while polling: the next run of the job closes the orphan while ' +
    'it waits for its own report job',
  async () => {
    const job = `${jp}_poll`;
    await h.pool.query(`CREATE TABLE ${h.schema}.poll (auftrag_nr bigint)`);
    await h.pool.query(`INSERT INTO ${h.schema}.poll VALUES (42)`);
    const before = await snapshot(`${h.schema}.poll`);
    const first = startCli(['run', job, '-c', configPath], env());
    children.push(first);
    const dead = await waitFor('the report job is recorded', async () =>
      (await attemptsOf(h.pool, job)).find((r) => r.report_job_id),
    );
    expect(slow.counters().openJobs).toContain(dead.report_job_id);
    // Its polls are recorded as its progress (page 0) while the server renders.
    await waitFor('a poll recorded as the progress', async () => {
      const { rows } = await h.pool.query<{ polls: number | null }>(
        `SELECT (progress->>'polls')::int AS polls FROM etl.attempts WHERE attempt_id = $1`,
        [dead.attempt_id],
      );
      return (rows[0]?.polls ?? 0) >= 1;
    });
    await killHard(first);
    const t0 = Date.now();
    // Nothing else runs this job: the orphan stays until the next run.
    expect((await attemptsOf(h.pool, job))[0]!.status).toBe('running');
    expect(await snapshot(`${h.schema}.poll`)).toBe(before);
    const second = startCli(['run', job, '-c', configPath], env());
    children.push(second);
    const ms = await closedAfter(slow, dead.attempt_id, dead.report_job_id!, t0);
    console.log(
      `[measured] run killed while polling: row closed and report job deleted ${ms} ms after kill -9 (by the next ` +
        `run, while it waited for the server)`,
    );
    expect(await second.exited).toBe(0);
    await expectClosedAsOrphan(dead.attempt_id, dead.report_job_id!);
    // It says that it stopped while the report rendered, and it ended at its last poll recorded, not at its start.
    const { rows: closed } = await h.pool.query<{
      error: string;
      started_at: Date;
      finished_at: Date;
      progress: { page: number; polls: number; at: string };
    }>('SELECT error, started_at, finished_at, progress FROM etl.attempts WHERE attempt_id = $1', [dead.attempt_id]);
    const c = closed[0]!;
    expect(c.progress.page).toBe(0);
    expect(c.error).toContain(
      `; it stopped while the server rendered the report (${c.progress.polls} poll` +
        `${c.progress.polls === 1 ? '' : 's'}), before its first page; nothing was committed;`,
    );
    expect(c.finished_at.getTime()).toBe(new Date(c.progress.at).getTime());
    expect(c.finished_at.getTime()).toBeGreaterThan(c.started_at.getTime());
    const runs = await attemptsOf(h.pool, job);
    expect(runs.map((r) => r.status)).toEqual(['interrupted', 'succeeded']);
    expect(slow.counters().openJobs).toEqual([]);
  },
  90_000,
);

it(
  'report-etl run killed -9 mid-load (pages being copied): the target is untouched, ' +
    'the next run closes the orphan',
  async () => {
    const job = `${jp}_load`;
    await h.pool.query(`CREATE TABLE ${h.schema}.load (auftrag_nr bigint, kunde text)`);
    await h.pool.query(`INSERT INTO ${h.schema}.load VALUES (1, 'before')`);
    const before = await snapshot(`${h.schema}.load`);
    paged.resetCounters();
    const first = startCli(['run', job, '-c', configPath], env());
    children.push(first);
    // Its progress, recorded outside the load transaction as it reads, says it is past page 3 before the kill.
    const dead = await waitFor(
      'the run is loading pages and has recorded its progress past page 3',
      async () => {
        const { rows } = await h.pool.query<{ attempt_id: string; report_job_id: string }>(
          `SELECT attempt_id, report_job_id FROM etl.attempts
            WHERE job = $1 AND status = 'running' AND (progress->>'page')::int >= 3`,
          [job],
        );
        return rows[0];
      },
      60_000,
    );
    await killHard(first);
    const t0 = Date.now();
    expect(paged.counters().openJobs).toContain(dead.report_job_id);
    // kill -9 mid-COPY: PostgreSQL rolled the transaction back when the session died.
    expect(await snapshot(`${h.schema}.load`)).toBe(before);
    const second = startCli(['run', job, '-c', configPath], env());
    children.push(second);
    const ms = await closedAfter(paged, dead.attempt_id, dead.report_job_id!, t0);
    console.log(
      `[measured] run killed mid-load: row closed and report job deleted ${ms} ms after kill -9 (by the next ` +
        `run, while it waited for the server)`,
    );
    expect(await second.exited).toBe(0);
    await expectClosedAsOrphan(dead.attempt_id, dead.report_job_id!);
    // It says where it stopped: the page it was reading of the 30 announced, the rows it had read.
    const { rows: closed } = await h.pool.query<{
      error: string;
      finished_at: Date;
      progress: { page: number; pagesRead: number; rows: number; at: string };
    }>('SELECT error, finished_at, progress FROM etl.attempts WHERE attempt_id = $1', [dead.attempt_id]);
    const p = closed[0]!.progress;
    // It ended when it was last heard of, before the kill, not when the next run noticed.
    expect(closed[0]!.finished_at.getTime()).toBe(new Date(p.at).getTime());
    expect(closed[0]!.finished_at.getTime()).toBeLessThanOrEqual(t0);
    expect(p.page).toBeGreaterThanOrEqual(3);
    expect(p.rows).toBeGreaterThanOrEqual(200);
    const where = p.pagesRead >= p.page ? 'after' : 'at';
    expect(closed[0]!.error).toContain(
      `; it stopped ${where} page ${p.page} of 30, ${p.rows.toLocaleString('en-US')} rows read; nothing was committed;`,
    );
    const { rows } = await h.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${h.schema}.load`);
    expect(rows[0]!.n).toBe(3000);
    expect(paged.counters().openJobs).toEqual([]);
  },
  120_000,
);

it(
  'a worker killed -9 mid-run: the janitor of another process (a scheduler, ' +
    'orphan checks every 5 s) closes it and hands its run back',
  async () => {
    const job = `${jp}_worker`;
    const scheduler = startCli(['scheduler', '-c', configPath], env());
    children.push(scheduler);
    await waitFor('scheduler running', () => scheduler.stdout().includes('running'));
    const worker = startCli(['worker', '-c', configPath], env());
    children.push(worker);
    await waitFor('worker running', () => worker.stdout().includes('running'));
    const config = configSchema.parse({
      connections: { slow: { baseUrl: slow.url, clientId: 'demo-client', clientSecret: 'x' } },
      jobs: {
        [job]: {
          connection: 'slow',
          report: { mandant: 7777, name: 'Sales/Orders' },
          target: { table: `${h.schema}.worker` },
        },
      },
    });
    const { jobId } = await enqueueManual(queue, config, job);
    const dead = await waitFor('the worker recorded the report job', async () =>
      (await attemptsOf(h.pool, job)).find((r) => r.report_job_id),
    );
    await killHard(worker);
    const t0 = Date.now();
    expect(slow.counters().openJobs).toContain(dead.report_job_id);
    const ms = await closedAfter(slow, dead.attempt_id, dead.report_job_id!, t0, 120_000);
    console.log(
      `[measured] worker killed mid-run: row closed and report job deleted ${ms} ms after kill ` +
        `-9 (by the scheduler's janitor)`,
    );
    await expectClosedAsOrphan(dead.attempt_id, dead.report_job_id!);
    // The janitor logs after it recorded the attempt: the line may reach this process a moment after the row is seen.
    await waitFor("the scheduler's janitor says it closed the orphan", () =>
      scheduler.stderr().includes('orphaned attempt closed'),
    );
    // It handed the run's queue job, held by the dead worker, back to the queue for the next worker (there is none).
    // The hand-back comes after the close, a few Redis and PostgreSQL round trips later: its line too is waited for.
    await waitFor("the scheduler's janitor says it handed the run back", () =>
      scheduler.stderr().includes('handed back to the queue'),
    );
    expect(await (await queue.getJob(jobId))!.getState()).toBe('waiting');
    scheduler.child.kill('SIGTERM');
    expect(await scheduler.exited).toBe(0);
  },
  180_000,
);
