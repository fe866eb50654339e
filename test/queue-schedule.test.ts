/**
 * Scheduler and workers end to end: real Redis, Postgres and the simulator. Two schedulers
 * and two workers give exactly one successful run per tick; catch-up after downtime; backfill with logical time;
 * duplicate enqueues of a tick are deduplicated.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import { pino } from 'pino';
import { completeAttempt } from '../src/history/attempts.ts';
import { silentLogger, type Logger } from '../src/logger.ts';
import { backfill } from '../src/queue/backfill.ts';
import { settableConfig, staticConfig } from '../src/config/live-config.ts';
import { tickQueueJobId } from '../src/queue/names.ts';
import { enqueueTick, makeScheduler, type SchedulerDeps } from '../src/queue/scheduler.ts';
import type { RunWorker } from '../src/queue/worker.ts';
import { uniqueName } from './support/env.ts';
import { jobEntry, loadedRows, servedRows, type Harness } from './support/harness.ts';
import { attemptsOf, captureLogger, insertTestAttempt, useQueueBench, waitFor, workerOf } from './support/queue-env.ts';

const prefix = uniqueName('qs');
const jp = uniqueName('js');
const { h, queue } = useQueueBench(prefix, jp, { jobDurationMs: 30 });
const workers: RunWorker[] = [];

afterAll(async () => {
  await Promise.all(workers.map((w) => w.close(0)));
});

function startWorker(config: () => ReturnType<Harness['config']>, concurrency = 1): RunWorker {
  const w = workerOf(h, config, { prefix, concurrency, overlapRetryMs: 200 });
  workers.push(w);
  return w;
}

it('two schedulers and two workers: exactly one successful run per tick', async () => {
  const job = `${jp}_tick`;
  const table = `${h.schema}.stock_ticks`;
  const config = h.config({
    [job]: { ...jobEntry({ name: 'Stock/Levels' }, { table }), schedule: '*/2 * * * * *', timezone: 'UTC' },
  });
  const live = staticConfig(config);
  const s1 = makeScheduler({ config: live, queue, pool: h.pool, logger: silentLogger });
  const s2 = makeScheduler({ config: live, queue, pool: h.pool, logger: silentLogger });
  startWorker(() => config);
  startWorker(() => config);
  const started = Date.now();
  await Promise.all([s1.start(), s2.start()]);
  expect(s1.scheduled()).toEqual({ [job]: '*/2 * * * * *@UTC' });
  await waitFor(
    '4 ticks',
    async () => (await attemptsOf(h.pool, job)).filter((r) => r.status === 'succeeded').length >= 4,
  );
  await Promise.all([s1.close(), s2.close()]);
  await waitFor('queue drained', async () => {
    const c = await queue.getJobCounts('waiting', 'active', 'delayed');
    return (c.waiting ?? 0) + (c.active ?? 0) + (c.delayed ?? 0) === 0;
  });
  const runs = await attemptsOf(h.pool, job);
  const ticks = runs.map((r) => r.scheduled_for!.getTime());
  // One row per tick (no duplicate attempt), each succeeded, ticks 2 s apart without a gap.
  expect(new Set(ticks).size).toBe(runs.length);
  expect(runs.every((r) => r.status === 'succeeded' && r.trigger === 'schedule' && r.attempt === 1)).toBe(true);
  const sorted = [...ticks].sort((a, b) => a - b);
  for (let i = 1; i < sorted.length; i++) expect(sorted[i]! - sorted[i - 1]!).toBe(2000);
  expect(sorted[0]! % 2000).toBe(0);
  expect(sorted[0]!).toBeGreaterThanOrEqual(started - 2000);
  for (const r of runs) expect(r.run_key).toBe(tickQueueJobId(job, r.scheduled_for!));
  // Each BullMQ job completed once, under its deterministic id.
  const done = await queue.getJobs(['completed'], 0, 100);
  const ids = done
    .filter((j) => j.data.job === job)
    .map((j) => j.id)
    .sort();
  expect(ids).toEqual(runs.map((r) => r.run_key).sort());
  expect(await loadedRows(h.pool, table, 'Stock/Levels.avw')).toEqual(servedRows('Stock/Levels.avw', {}, 1));
  expect(h.sim.counters().openJobs).toEqual([]);
  await Promise.all(workers.splice(0).map((w) => w.close(0)));
});

it('a tick enqueued twice is queued once', async () => {
  const job = `${jp}_dup`;
  const config = h.config({
    [job]: { ...jobEntry({ name: 'Stock/Levels' }, { table: `${h.schema}.dup` }), schedule: '0 6 * * *' },
  });
  const tick = new Date('2026-01-05T05:00:00Z');
  const results = await Promise.all(Array.from({ length: 5 }, () => enqueueTick(queue, config, job, tick, 'schedule')));
  expect(results.filter((r) => r.added)).toHaveLength(1);
  expect(new Set(results.map((r) => r.jobId))).toEqual(new Set([tickQueueJobId(job, tick)]));
  const queued = await queue.getJob(tickQueueJobId(job, tick));
  expect(queued?.opts.attempts).toBe(3);
  expect(queued?.opts.backoff).toEqual({ type: 'exponential', delay: 30_000 });
  await queued?.remove();
});

it('catch-up after downtime: all missed ticks within the window, or only the latest', async () => {
  const all = `${jp}_cu_all`;
  const latest = `${jp}_cu_latest`;
  const none = `${jp}_cu_none`;
  const base = {
    ...jobEntry({ name: 'Stock/Levels' }, { table: `${h.schema}.cu` }),
    schedule: '*/2 * * * * *',
    timezone: 'UTC',
  };
  const config = h.config({
    [all]: { ...base, catchup: { all: '1h' } },
    [latest]: { ...base, catchup: 'latest' },
    [none]: base,
  });
  // The run history says each job last ran 10 s before "now": 5 ticks were missed while no scheduler ran.
  const now = new Date(Math.floor(Date.now() / 2000) * 2000 + 500);
  const last = new Date(now.getTime() - 500 - 10_000);
  for (const job of [all, latest, none]) {
    const attemptId = randomUUID();
    await insertTestAttempt(h.pool, {
      attemptId,
      job,
      runKey: tickQueueJobId(job, last),
      scheduledFor: last,
      trigger: 'schedule',
    });
    await completeAttempt(h.pool, attemptId, { rows: 1, pages: 1, bytes: 1 });
  }
  const scheduler = makeScheduler({
    config: staticConfig(config),
    queue,
    pool: h.pool,
    logger: silentLogger,
    now: () => now,
  });
  await scheduler.start();
  await scheduler.close();
  const queued = (await queue.getJobs(['waiting', 'delayed', 'active', 'completed', 'failed'], 0, 1000)).filter(
    (j) => j.data.trigger === 'catchup',
  );
  const of = (job: string) =>
    queued
      .filter((j) => j.data.job === job)
      .map((j) => j.data.scheduledFor)
      .sort();
  const expected = [8, 6, 4, 2, 0].map((s) => new Date(now.getTime() - 500 - s * 1000).toISOString());
  expect(of(all)).toEqual(expected);
  expect(of(latest)).toEqual([expected.at(-1)]);
  expect(of(none)).toEqual([]);
  const first = queued.find((j) => j.data.job === all && j.data.scheduledFor === expected[0]);
  expect(first?.id).toBe(tickQueueJobId(all, new Date(expected[0]!)));
  expect(first?.data.logicalStart).toBe(last.toISOString());
  for (const j of queued) await j.remove();
});

it('says when no schedule is in force, naming the invalid jobs, once', async () => {
  const config = h.config({
    [`${jp}_unscheduled`]: jobEntry({ name: 'Stock/Levels' }, { table: `${h.schema}.unscheduled` }),
  });
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
  const invalid = [{ kind: 'job' as const, name: `${jp}_broken`, problems: ['jobs.yaml:9:5: jobs.x.report.name: …'] }];
  const live = settableConfig(config, invalid);
  const scheduler = makeScheduler({ config: live, queue, pool: h.pool, logger });
  await scheduler.start();
  live.set(config, invalid);
  await scheduler.close();
  const said = lines.filter((l) => l.includes('no schedule in force'));
  expect(said).toHaveLength(1);
  expect(JSON.parse(said[0]!).msg).toBe(
    `no schedule in force: no valid job of jobs.yaml has a schedule (invalid, skipped: ${jp}_broken; ` +
      `\`report-etl validate\` lists their problems)`,
  );
});

it('backfill: one run per interval with its own logical time, deduplicated on a second call', async () => {
  const job = `${jp}_bf`;
  const table = `${h.schema}.orders_bf`;
  const config = h.config({
    [job]: {
      ...jobEntry(
        {
          name: 'Sales/Orders',
          paging: 500,
          parameters: { FROM: '%{logicalStart:yyyy-MM-dd}', TO: '%{logicalEnd:yyyy-MM-dd}' },
        },
        { table, mode: 'append' },
      ),
      schedule: '0 6 * * *',
      timezone: 'Europe/Zurich',
    },
  });
  const from = new Date('2024-03-01T05:00:00Z'); // 06:00 Zurich: exclusive
  const to = new Date('2024-03-04T05:00:00Z');
  const first = await backfill({ queue, config }, job, from, to);
  expect(first.runs.map((r) => [r.tick.toISOString(), r.added])).toEqual([
    ['2024-03-02T05:00:00.000Z', true],
    ['2024-03-03T05:00:00.000Z', true],
    ['2024-03-04T05:00:00.000Z', true],
  ]);
  const again = await backfill({ queue, config }, job, from, to);
  expect(again.runs.every((r) => !r.added)).toBe(true);
  startWorker(() => config, 2);
  await waitFor(
    '3 backfilled runs',
    async () => (await attemptsOf(h.pool, job)).filter((r) => r.status === 'succeeded').length === 3,
  );
  const runs = await attemptsOf(h.pool, job);
  expect(runs.map((r) => r.trigger)).toEqual(['backfill', 'backfill', 'backfill']);
  // Each run loaded exactly its day: FROM = previous tick's date, TO = the tick's date.
  const expected = ['2024-03-01', '2024-03-02', '2024-03-03', '2024-03-04'];
  const want = expected
    .slice(0, 3)
    .flatMap((day, i) => servedRows('Sales/Orders.avw', { FROM: day, TO: expected[i + 1]! }, 1))
    .sort();
  expect(want.length).toBeGreaterThan(0);
  expect(await loadedRows(h.pool, table, 'Sales/Orders.avw')).toEqual(want);
  const requests = (
    await h.pool.query('SELECT logical_start, logical_end FROM etl.runs WHERE job = $1 ORDER BY logical_end', [job])
  ).rows;
  expect(requests.map((r) => [r.logical_start.toISOString(), r.logical_end.toISOString()])).toEqual([
    ['2024-03-01T05:00:00.000Z', '2024-03-02T05:00:00.000Z'],
    ['2024-03-02T05:00:00.000Z', '2024-03-03T05:00:00.000Z'],
    ['2024-03-03T05:00:00.000Z', '2024-03-04T05:00:00.000Z'],
  ]);
});

it('a config change reschedules live', async () => {
  const a = `${jp}_live_a`;
  const b = `${jp}_live_b`;
  const entry = (schedule: string) => ({
    ...jobEntry({ name: 'Stock/Levels' }, { table: `${h.schema}.live` }),
    schedule,
    timezone: 'UTC',
  });
  const live = settableConfig(h.config({ [a]: entry('0 6 * * *') }));
  const scheduler = makeScheduler({ config: live, queue, pool: h.pool, logger: silentLogger });
  await scheduler.start();
  expect(scheduler.scheduled()).toEqual({ [a]: '0 6 * * *@UTC' });
  live.set(h.config({ [a]: entry('0 7 * * *'), [b]: entry('0 8 * * *') }));
  expect(scheduler.scheduled()).toEqual({ [a]: '0 7 * * *@UTC', [b]: '0 8 * * *@UTC' });
  live.set(h.config({ [b]: entry('0 8 * * *') }));
  expect(scheduler.scheduled()).toEqual({ [b]: '0 8 * * *@UTC' });
  await scheduler.close();
  expect(scheduler.scheduled()).toEqual({});
});

/**
 * A stand-in for node-cron's createTask that records each job's handlers, so that a test fires a missed tick when it
 * wants (node-cron reports a tick it fires more than a second late as `execution:missed`) instead of blocking the
 * event loop for seconds aligned to the wall clock.
 */
function recordingTasks() {
  const missed = new Map<string, (ctx: { date: Date }) => unknown>();
  const fired = new Map<string, (ctx: { date: Date }) => unknown>();
  const createTask = ((_expr: string, fn: (ctx: { date: Date }) => unknown, options?: { name?: string }) => {
    const name = options?.name ?? '';
    fired.set(name, fn);
    return {
      on(event: string, fn: (ctx: { date: Date }) => unknown) {
        if (event === 'execution:missed') missed.set(name, fn);
      },
      start: () => undefined,
      destroy: async () => undefined,
    };
  }) as unknown as SchedulerDeps['createTask'];
  return {
    createTask,
    fire: (job: string, date: Date) => fired.get(`report-etl:${job}`)!({ date }),
    fireMissed: (job: string, date: Date) => missed.get(`report-etl:${job}`)!({ date }),
  };
}

/**
 * Starts a scheduler of one job `<jp>_<name>` (Stock/Levels into the file's schema's table `name`) on `schedule` in
 * `timezone`, whose ticks a test fires through the returned recording tasks.
 */
async function recordedScheduler(
  name: string,
  schedule: string,
  timezone: string,
  o: { logger?: Logger; now?: () => Date } = {},
) {
  const job = `${jp}_${name}`;
  const config = h.config({
    [job]: { ...jobEntry({ name: 'Stock/Levels' }, { table: `${h.schema}.${name}` }), schedule, timezone },
  });
  const tasks = recordingTasks();
  const scheduler = makeScheduler({
    config: staticConfig(config),
    queue,
    pool: h.pool,
    logger: o.logger ?? silentLogger,
    ...(o.now ? { now: o.now } : {}),
    createTask: tasks.createTask,
  });
  await scheduler.start();
  return { job, tasks, scheduler };
}

it(
  'a local time the clocks repeat, which node-cron fires at its second coming only, is queued for its first: ' +
    'one run, no day without one',
  async () => {
    const { logger, lines } = captureLogger('info');
    const { job, tasks, scheduler } = await recordedScheduler('fallback', '15 2 * * *', 'Europe/Zurich', { logger });
    // 25 October 2026 in Europe/Zurich: 02:15 CEST, then 02:15 CET an hour later. node-cron fires the second alone
    // (test/queue-time.test.ts); the tick is the first.
    const first = new Date('2026-10-25T00:15:00Z');
    const again = new Date('2026-10-25T01:15:00Z');
    try {
      await tasks.fire(job, again);
      const queued = await queue.getJob(tickQueueJobId(job, first));
      expect(queued?.data).toMatchObject({ scheduledFor: first.toISOString(), logicalEnd: first.toISOString() });
      // Were both fired, the tick would still be queued once.
      await tasks.fire(job, first);
      await tasks.fire(job, again);
    } finally {
      await scheduler.close();
    }
    const queued = await queue.getJob(tickQueueJobId(job, first));
    expect(await queue.getJob(tickQueueJobId(job, again))).toBeUndefined();
    const repeated = lines.filter((l) => String(l.msg).startsWith('tick of a local time the clocks repeated'));
    expect(repeated.map((l) => [l.fired, l.tick])).toEqual([
      [again.toISOString(), first.toISOString()],
      [again.toISOString(), first.toISOString()],
    ]);
    const added = lines.filter((l) => l.msg === 'tick: run queued').map((l) => String(l.tick));
    expect(added).toEqual([first.toISOString()]);
    await queued?.remove();
  },
);

it('a tick fired late (a blocked event loop) is still queued, once', async () => {
  const { job, tasks, scheduler } = await recordedScheduler('late', '* * * * * *', 'UTC');
  // Three ticks two to four seconds late, the first reported twice: each queued, once.
  const now = Math.floor(Date.now() / 1000) * 1000;
  const late = [4, 3, 2].map((s) => new Date(now - s * 1000));
  try {
    await Promise.all([...late, late[0]!].map((tick) => tasks.fireMissed(job, tick)));
  } finally {
    await scheduler.close();
  }
  for (const tick of late) {
    expect(await queue.getJob(tickQueueJobId(job, tick)), `tick ${tick.toISOString()}`).toBeDefined();
  }
  const jobs = (await queue.getJobs(['waiting', 'delayed', 'active', 'completed', 'failed'])).filter(
    (j) => j.data.job === job,
  );
  expect(jobs.map((j) => j.id).sort()).toEqual(late.map((t) => tickQueueJobId(job, t)).sort());
  await Promise.all(jobs.map((j) => j.remove()));
});

it('a tick missed long ago (a paused process) is left to the catch-up policy, not queued', async () => {
  const { logger, lines } = captureLogger('warn');
  // The scheduler's clock says two minutes later than the tick node-cron reports: as after a long pause.
  const { job, tasks, scheduler } = await recordedScheduler('paused', '* * * * * *', 'UTC', {
    logger,
    now: () => new Date(Date.now() + 120_000),
  });
  const tick = new Date(Math.floor(Date.now() / 1000) * 1000);
  try {
    await tasks.fireMissed(job, tick);
  } finally {
    await scheduler.close();
  }
  const dropped = lines.filter((l) => String(l.msg).startsWith('tick missed long ago')).map((l) => String(l.tick));
  expect(dropped).toEqual([tick.toISOString()]);
  expect(await queue.getJob(tickQueueJobId(job, tick))).toBeUndefined();
});
