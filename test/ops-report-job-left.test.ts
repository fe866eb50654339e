/**
 * A report job an ended attempt left open on the server (docs/operations.md "No orphans (the janitor)"): its process
 * was killed between its COMMIT and its DELETE, or its DELETE failed. The attempt's row says the job is open; a sweep
 * of the janitor DELETEs it once the attempt ended a while ago, and records it deleted. An attempt that deleted its
 * own job says so.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { resolveJob } from '../src/config/load.ts';
import { completeAttempt, getAttempt } from '../src/history/attempts.ts';
import { silentLogger } from '../src/logger.ts';
import {
  checkMayRun,
  openReportClient,
  recordAttempt,
  startReportJob,
  waitForReportJob,
} from '../src/pipeline/attempt-steps.ts';
import { OPEN_REPORT_JOB_GRACE_MS } from '../src/queue/janitor.ts';
import { uniqueName } from './support/env.ts';
import { jobEntry, startHarness, type Harness } from './support/harness.ts';
import { deleteKeys, janitorOf } from './support/queue-env.ts';

let h: Harness;
/** The janitor's key prefix: its keys are deleted after. */
const prefix = uniqueName('rjq');
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  if (h) await deleteKeys(h.redis, prefix);
  await h?.close();
});

it('an attempt that deleted its report job records it closed', async () => {
  const job = uniqueName('rjclosed');
  const config = h.config({
    [job]: jobEntry({ name: 'Sales/Orders', outputType: 'txt', paging: 100 }, { table: `${h.schema}.${job}` }),
  });
  const done = await h.run(config, job);
  const row = await getAttempt(h.pool, done.attemptId);
  expect(row?.report_job_id).not.toBeNull();
  expect(row?.report_job_open).toBe(false);
  expect(h.sim.counters().openJobs).not.toContain(row?.report_job_id);
});

it('a sweep deletes the report job of an attempt that committed and died before its DELETE', async () => {
  const job = uniqueName('rjleft');
  const config = h.config({
    [job]: jobEntry(
      { name: 'Sales/Orders', outputType: 'txt', paging: 100, parameters: { ROWS: '250' } },
      { table: `${h.schema}.${job}` },
    ),
  });
  // The attempt's steps up to its report job, then its end recorded as its commit records it: no DELETE followed.
  const a = await recordAttempt({
    job: resolveJob(config, job),
    request: {},
    pool: h.pool,
    redis: h.redis,
    logger: silentLogger,
  });
  const check = await checkMayRun(a);
  if (check.kind !== 'run') throw new Error('expected a run');
  const lease = await openReportClient(a);
  const started = await startReportJob(a, lease.client, check.request);
  await waitForReportJob(a, lease.client, started);
  await lease.release();
  await completeAttempt(h.pool, a.attemptId, { rows: 250, pages: 3, bytes: 1 });
  const reportJobId = started.job.id;
  expect(await getAttempt(h.pool, a.attemptId)).toMatchObject({ status: 'succeeded', report_job_open: true });

  let clock = new Date();
  const janitor = janitorOf(h, config, { prefix, now: () => clock });
  try {
    // Just ended: its own DELETE may be under way.
    const early = await janitor.sweep();
    expect(early.leased).toBe(true);
    expect(early.openReportJobs).toEqual([]);
    expect(h.sim.counters().openJobs).toContain(reportJobId);

    clock = new Date(Date.now() + OPEN_REPORT_JOB_GRACE_MS + 60_000);
    const late = await janitor.sweep();
    expect(late.openReportJobs).toEqual([reportJobId]);
    expect(h.sim.counters().openJobs).not.toContain(reportJobId);
    expect(await getAttempt(h.pool, a.attemptId)).toMatchObject({ status: 'succeeded', report_job_open: false });
    expect((await janitor.sweep()).openReportJobs).toEqual([]);
  } finally {
    await janitor.close();
  }
});
