/**
 * The steps of one attempt (src/pipeline/attempt-steps.ts), each on its own against the simulator over real HTTP and
 * the real PostgreSQL and Redis: what it records, what it asks of the server, and the stage it names.
 */
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { resolveJob } from '../src/config/load.ts';
import { getAttempt } from '../src/history/attempts.ts';
import { silentLogger } from '../src/logger.ts';
import type { AttemptOptions } from '../src/pipeline/attempt.ts';
import {
  checkMayRun,
  clearDeadAttempts,
  commitLoad,
  deleteReportJob,
  loadedResult,
  loadReport,
  loadTransactionOf,
  openReportClient,
  openReport,
  recordAttempt,
  recordFailedAttempt,
  startReportJob,
  waitForReportJob,
} from '../src/pipeline/attempt-steps.ts';
import { runAttempt } from '../src/pipeline/run-attempt.ts';
import { ReportFailedError } from '../src/report-api/errors.ts';
import { withLoadTransaction } from '../src/warehouse/load-transaction.ts';
import { uniqueName } from './support/env.ts';
import { jobEntry, startHarness, type Harness } from './support/harness.ts';
import { insertTestAttempt } from './support/queue-env.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

/** Options of an attempt of a fresh job `Sales/Orders` (txt, 250 rows in 3 pages) in `mode`. */
function options(
  mode: 'replace' | 'append' = 'replace',
  report: Record<string, unknown> = {},
  request: AttemptOptions['request'] = {},
): AttemptOptions {
  const job = uniqueName('steps');
  const config = h.config({
    [job]: jobEntry(
      { name: 'Sales/Orders', outputType: 'txt', paging: 100, parameters: { ROWS: '250' }, ...report },
      { table: `${h.schema}.${job}`, mode },
    ),
  });
  return { job: resolveJob(config, job), request, pool: h.pool, redis: h.redis, logger: silentLogger };
}

it('recordAttempt records the attempt running, numbered within its run', async () => {
  const o = options('replace', {}, { runKey: 'k1', trigger: 'schedule', scheduledFor: '2026-11-24T02:15:00Z' });
  const first = await recordAttempt(o);
  const second = await recordAttempt(o);
  expect([first.number, second.number]).toEqual([1, 2]);
  expect(first.trace.stage).toBe('config');
  expect(await getAttempt(h.pool, second.attemptId)).toMatchObject({
    status: 'running',
    run_key: 'k1',
    trigger: 'schedule',
    attempt: 2,
    target_table: first.targetTable,
  });
});

it('checkMayRun renders the start request and finds dead attempts only with the overlap lock', async () => {
  const o = options(
    'replace',
    { parameters: { ROWS: '250', FROM: '%{logicalStart:yyyy-MM-dd}' } },
    { runKey: uniqueName('k'), logicalStart: '2026-11-01T00:00:00Z', logicalEnd: '2026-11-02T00:00:00Z' },
  );
  // An attempt of the same run recorded running by a process that left no owner session: dead.
  const deadId = crypto.randomUUID();
  await insertTestAttempt(h.pool, { attemptId: deadId, job: o.job.name, runKey: o.request!.runKey!, worker: 'gone:1' });
  const a = await recordAttempt(o);
  const without = await checkMayRun(a);
  expect(without).toMatchObject({
    kind: 'run',
    dead: [],
    request: {
      mandant: '7777',
      name: 'Sales/Orders',
      outputType: 'txt',
      paging: 100,
      parameters: { ROWS: '250', FROM: '2026-11-01' },
    },
  });
  const withLock = await checkMayRun(await recordAttempt({ ...o, exclusive: { confirm: async () => true } }));
  expect(withLock.kind === 'run' && withLock.dead.map((d) => d.attempt_id)).toContain(deadId);
});

it(
  'checkMayRun says already-loaded for an append whose run was appended, ' +
    'and refuses a bad report name at stage config',
  async () => {
    const o = options('append', {}, { runKey: uniqueName('k') });
    expect(await runAttempt(o)).toMatchObject({ status: 'succeeded', rows: 250 });
    expect(await checkMayRun(await recordAttempt(o))).toEqual({ kind: 'already-loaded' });

    const bad = await recordAttempt(options('replace', { name: 'Sales/../Orders' }));
    await expect(bad.trace.step('check', () => checkMayRun(bad))).rejects.toMatchObject({
      code: 'REPORT_NAME_INVALID',
    });
    expect(bad.trace.stage).toBe('config');
  },
);

it('openReportClient names stage token and fails there when the server cannot be reached', async () => {
  const o = options();
  const a = await recordAttempt(o);
  const lease = await a.trace.step('token', () => openReportClient(a));
  expect(a.trace.stage).toBe('token');
  await lease.release();
  const free = createServer();
  await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(free.address() as AddressInfo).port}`;
  await new Promise<void>((resolve) => free.close(() => resolve()));
  const config = h.config(
    { j: jobEntry({ name: 'Sales/Orders', outputType: 'txt' }, { table: `${h.schema}.unreachable`, mode: 'replace' }) },
    { baseUrl },
  );
  const far = await recordAttempt({ ...o, job: resolveJob(config, 'j') });
  await expect(openReportClient(far)).rejects.toMatchObject({ code: 'SERVER_UNREACHABLE' });
});

it(
  'startReportJob records the report job id, waitForReportJob waits for its rows, ' + 'deleteReportJob deletes it',
  async () => {
    const a = await recordAttempt(options());
    const check = await checkMayRun(a);
    if (check.kind !== 'run') throw new Error('expected a run');
    const lease = await openReportClient(a);
    try {
      const started = await a.trace.step('start', () => startReportJob(a, lease.client, check.request));
      expect(a.trace.stage).toBe('start');
      expect((await getAttempt(h.pool, a.attemptId))!.report_job_id).toBe(started.job.id);
      expect(h.sim.counters().openJobs).toContain(started.job.id);
      const finished = await a.trace.step('render', () => waitForReportJob(a, lease.client, started));
      expect(a.trace.stage).toBe('poll');
      expect(finished).toMatchObject({ jobId: started.job.id, rows: 250, pages: 3 });
      expect((await getAttempt(h.pool, a.attemptId))!.report_job_open).toBe(true);
      await deleteReportJob(a, started, lease.client);
      expect(h.sim.counters().openJobs).not.toContain(started.job.id);
      expect((await getAttempt(h.pool, a.attemptId))!.report_job_open).toBe(false);
      // A second DELETE of the same job (the server answers 404) is logged, not thrown.
      await deleteReportJob(a, started, lease.client);
    } finally {
      await lease.release();
    }
  },
);

it("clearDeadAttempts deletes a dead attempt's report job and records it interrupted", async () => {
  const o = options();
  const dead = await recordAttempt(o);
  const lease = await openReportClient(dead);
  try {
    const check = await checkMayRun(dead);
    if (check.kind !== 'run') throw new Error('expected a run');
    const started = await startReportJob(dead, lease.client, check.request);
    const a = await recordAttempt(o);
    await clearDeadAttempts(a, lease.client, [
      { attempt_id: dead.attemptId, attempt: 1, report_job_id: started.job.id, worker: 'gone:1', owner_lock: null },
    ]);
    expect(h.sim.counters().openJobs).not.toContain(started.job.id);
    expect(await getAttempt(h.pool, dead.attemptId)).toMatchObject({ status: 'interrupted' });
  } finally {
    await lease.release();
  }
});

it('loadReport loads every page and commitLoad records the attempt succeeded in the same transaction', async () => {
  const o = options();
  const a = await recordAttempt(o);
  const check = await checkMayRun(a);
  if (check.kind !== 'run') throw new Error('expected a run');
  const lease = await openReportClient(a);
  const started = await startReportJob(a, lease.client, check.request);
  try {
    const finished = await waitForReportJob(a, lease.client, started);
    const report = openReport(a, lease.client, started, finished);
    const loaded = await withLoadTransaction(h.pool, loadTransactionOf(a), async (lt) => {
      const l = await loadReport(a, lt.tx, report, check);
      // Not committed yet: readers see no rows and the attempt running.
      expect(await getAttempt(h.pool, a.attemptId)).toMatchObject({ status: 'running' });
      return { ...l, committed: await a.trace.step('commit', () => commitLoad(a, lt, l, report.rows)) };
    });
    await report.rows.close();
    expect(a.trace.stage).toBe('commit');
    expect(await loadedResult(a, report, loaded)).toMatchObject({
      status: 'succeeded',
      rows: 250,
      pages: 3,
      plan: 'inference-staging',
      attempt: 1,
    });
    const { rows: counted } = await h.pool.query(`SELECT count(*)::int AS n FROM ${a.targetTable}`);
    expect(counted[0].n).toBe(250);
    expect(await getAttempt(h.pool, a.attemptId)).toMatchObject({ status: 'succeeded', rows: '250', pages: 3 });
  } finally {
    await deleteReportJob(a, started, lease.client);
    await lease.release();
  }
});

it(
  'recordFailedAttempt records the failure at the stage the attempt was in, ' +
    "or the one the error names, with the server's words",
  async () => {
    const a = await recordAttempt(options());
    await a.trace.step('token', async () => undefined);
    const failed = await recordFailedAttempt(a, new Error('socket hang up'));
    expect(failed).toMatchObject({ attemptId: a.attemptId, code: 'INTERNAL', retryable: false });
    const b = await recordAttempt(options());
    await b.trace.step('load', async () => undefined);
    await recordFailedAttempt(b, new ReportFailedError('job-1', 'Report execution failed:\nDivision by zero'));
    const { rows } = await h.pool.query(
      'SELECT attempt_id, stage, error_kind, server_message FROM etl.run_errors WHERE ' +
        'attempt_id = ANY($1) ORDER BY stage',
      [[a.attemptId, b.attemptId]],
    );
    expect(rows).toEqual([
      {
        attempt_id: b.attemptId,
        stage: 'poll',
        error_kind: 'REPORT_FAILED',
        server_message: 'Report execution failed:\nDivision by zero',
      },
      { attempt_id: a.attemptId, stage: 'token', error_kind: 'INTERNAL', server_message: null },
    ]);
    expect(await getAttempt(h.pool, a.attemptId)).toMatchObject({ status: 'failed' });
  },
);
