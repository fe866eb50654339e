/**
 * A fleet on one ERP (docs/architecture.md "A fleet"): two worker processes' worth of workers never open more report
 * jobs on the server than the connection's maxConcurrentReports; a run waiting for a slot has no attempt yet; a
 * backfill of many ticks does not hold back another job's scheduled tick. Real workers, queue, simulator.
 */
import { afterAll, expect, it } from 'vitest';
import { staticConfig } from '../src/config/live-config.ts';
import { backfill } from '../src/queue/backfill.ts';
import { enqueueTick } from '../src/queue/scheduler.ts';
import type { RunWorker } from '../src/queue/worker.ts';
import { ReportSlots } from '../src/report-api/report-slots.ts';
import { uniqueName } from './support/env.ts';
import { jobEntry } from './support/harness.ts';
import { attemptsOf, captureLogger, useQueueBench, waitFor, workerOf } from './support/queue-env.ts';
import { adminServerOf } from './support/admin-login.ts';

const prefix = uniqueName('qf');
const jp = uniqueName('jf');
// Report jobs stay Running 300 ms: long enough for many to be open at once without a limit.
const { h, queue } = useQueueBench(prefix, jp, { jobDurationMs: 300 });
const workers: RunWorker[] = [];

afterAll(async () => {
  await Promise.all(workers.map((w) => w.close(0)));
});

it(
  'never has more report jobs open on the server than maxConcurrentReports, ' +
    'across workers, and every run succeeds',
  async () => {
    const names = Array.from({ length: 10 }, (_, k) => `${jp}_lim${k}`);
    const config = h.config(
      Object.fromEntries(
        names.map((n) => [
          n,
          {
            ...jobEntry(
              { name: 'Stock/Levels', outputType: 'txt', paging: 100, parameters: { ROWS: '10' } },
              { table: `${h.schema}.${n}`, mode: 'replace' },
            ),
            schedule: '0 6 * * *',
          },
        ]),
      ),
      { maxConcurrentReports: 2 },
    );
    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, h.sim.counters().openJobs.length)), 5);
    try {
      // Two "processes" of four concurrent runs each.
      for (let k = 0; k < 2; k++)
        workers.push(
          workerOf(h, config, { logger: captureLogger().logger, prefix, concurrency: 4, workerName: `w${k}` }),
        );
      const tick = new Date('2026-11-24T05:00:00Z');
      for (const n of names) await enqueueTick(queue, config, n, tick, 'schedule');
      await waitFor(
        'every run to succeed',
        async () => {
          const ok = await h.pool.query(
            `SELECT count(*)::int AS n FROM etl.attempts WHERE job LIKE $1 AND status = 'succeeded'`,
            [`${jp}_lim%`],
          );
          return ok.rows[0].n === names.length;
        },
        60_000,
      );
    } finally {
      clearInterval(sampler);
    }
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(2);
    const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM etl.attempts WHERE job LIKE $1`, [
      `${jp}_lim%`,
    ]);
    expect(rows[0].n).toBe(names.length);
    await Promise.all(workers.splice(0).map((w) => w.close(0)));
  },
);

it('a run in the foreground waits for a slot before it records an attempt, and says so', async () => {
  const job = `${jp}_fg`;
  const config = h.config(
    {
      [job]: jobEntry(
        { name: 'Stock/Levels', outputType: 'txt', parameters: { ROWS: '10' } },
        { table: `${h.schema}.${job}`, mode: 'replace' },
      ),
    },
    { maxConcurrentReports: 1 },
  );
  const slots = new ReportSlots(h.redis, { prefix, pollMs: 200 });
  const busy = await slots.acquire('sim', 1);
  const { logger, lines } = captureLogger();
  try {
    const pending = h.run(config, job, {}, { logger, slots });
    await waitFor('the run to wait for a slot', () =>
      lines.some((l) => l.msg === 'waiting for a slot on sim: 1 of 1 busy'),
    );
    expect(await attemptsOf(h.pool, job)).toEqual([]);
    await busy.release();
    expect(await pending).toMatchObject({ status: 'succeeded', rows: 10 });
    expect(lines.some((l) => l.msg === 'got a slot on sim')).toBe(true);
    expect(await slots.usage('sim')).toEqual({ held: 0, waiting: 0 });
  } finally {
    await busy.release();
    await slots.close();
  }
});

it("a backfill of many ticks does not hold back another job's scheduled tick", async () => {
  const filler = `${jp}_backfill`;
  const other = `${jp}_sched`;
  const entry = (n: string) => ({
    ...jobEntry(
      { name: 'Stock/Levels', outputType: 'txt', parameters: { ROWS: '10' } },
      { table: `${h.schema}.${n}`, mode: 'replace' },
    ),
    schedule: '0 6 * * *',
  });
  const config = h.config(
    { [filler]: entry(filler), [other]: entry(other) },
    { maxConcurrentReports: 1, pollIntervalMs: 20 },
  );
  const w = workerOf(h, config, { logger: captureLogger().logger, prefix, concurrency: 1, workerName: 'fair' });
  workers.push(w);
  // 12 daily ticks of one job, oldest first, then, once the first of them runs, one scheduled tick of another job.
  const queued = await backfill(
    { queue, config },
    filler,
    new Date('2026-09-01T00:00:00Z'),
    new Date('2026-09-13T00:00:00Z'),
  );
  expect(queued.runs).toHaveLength(12);
  await waitFor('the backfill to start', async () => (await attemptsOf(h.pool, filler)).length > 0, 60_000);
  await enqueueTick(queue, config, other, new Date('2026-11-24T05:00:00Z'), 'schedule');
  await waitFor(
    'the scheduled tick to succeed',
    async () => (await attemptsOf(h.pool, other)).some((r) => r.status === 'succeeded'),
    60_000,
  );
  const started = (await attemptsOf(h.pool, other))[0]!.started_at;
  const before = (await attemptsOf(h.pool, filler)).filter((r) => r.started_at < started);
  // The backfill run going on when the tick was queued, and at most one its worker had already taken.
  expect(before.length).toBeLessThanOrEqual(2);
  await waitFor(
    'the whole backfill',
    async () => (await attemptsOf(h.pool, filler)).filter((r) => r.status === 'succeeded').length === 12,
    120_000,
  );
  // In the order of its ticks.
  const ticks = (await attemptsOf(h.pool, filler)).map((r) => (r.scheduled_for as Date).getTime());
  expect(ticks).toEqual([...ticks].sort((a, b) => a - b));
});

it('the jobs overview and /metrics show a run waiting for a slot and how busy the connection is', async () => {
  const job = `${jp}_shown`;
  const config = h.config(
    { [job]: jobEntry({ name: 'Stock/Levels', outputType: 'txt' }, { table: `${h.schema}.${job}`, mode: 'replace' }) },
    { maxConcurrentReports: 1 },
  );
  const slots = new ReportSlots(h.redis, { prefix, pollMs: 200 });
  const busy = await slots.acquire('sim', 1, { label: 'other_job' });
  const controller = new AbortController();
  let asked = false;
  const waiting = slots.acquire('sim', 1, { label: job, signal: controller.signal, onWait: () => (asked = true) });
  waiting.catch(() => undefined);
  const token = 'fleet-admin-token';
  const server = await adminServerOf(h, queue, { auth: { token }, liveConfig: staticConfig(config) });
  try {
    await waitFor('the run to wait', () => asked);
    const headers = { authorization: `Bearer ${token}` };
    const page = await (await fetch(`${server.url}/admin`, { headers })).text();
    expect(page).toContain('waiting for a slot on sim: 1 of 1 busy');
    const metrics = await (await fetch(`${server.url}/metrics`, { headers })).text();
    expect(metrics).toContain('report_etl_report_slots_in_use{connection="sim"} 1');
    expect(metrics).toContain('report_etl_report_slots_limit{connection="sim"} 1');
    expect(metrics).toContain('report_etl_runs_waiting_for_slot{connection="sim"} 1');
  } finally {
    controller.abort();
    await busy.release();
    await server.close();
    await slots.close();
  }
});
