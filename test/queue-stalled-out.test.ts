/**
 * A run whose every worker dies: once its queue job stalled more often than BullMQ's maxStalledCount allows, BullMQ
 * fails it without calling the processor, and the worker that took it records the run failed (RUN_STALLED, not
 * retried, the replay command) and alerts it, so that `runs --status failed` and `replay --failed` see the end
 * (docs/operations.md "No orphans (the janitor)"). Real PostgreSQL and Redis; the dead worker is a BullMQ worker that
 * takes the queue job and never renews its lock.
 */
import { Worker } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import { EtlError } from '../src/errors.ts';
import { failAttempt } from '../src/history/attempts.ts';
import { failedRunsToReplay } from '../src/history/run-list.ts';
import { getRun } from '../src/history/runs.ts';
import { enqueueManual } from '../src/queue/manual-run.ts';
import { recordUnrunFailure } from '../src/queue/given-up.ts';
import { QUEUE_NAME } from '../src/queue/names.ts';
import type { QueuedRun } from '../src/queue/queue.ts';
import type { RunWorker } from '../src/queue/worker.ts';
import { uniqueName } from './support/env.ts';
import { jobEntry } from './support/harness.ts';
import { insertTestAttempt, useQueueBench, waitFor, waitForQueueJob, workerOf } from './support/queue-env.ts';

const jp = uniqueName('stallout');
const prefix = uniqueName('stalloutq');
const { h, queue } = useQueueBench(prefix, jp);
const job = `${jp}_orders`;
const closers: (() => Promise<unknown>)[] = [];

afterAll(async () => {
  for (const c of closers.reverse()) await c().catch(() => undefined);
});

/** Takes the next queue job as a worker that dies at once would: its lock of `lockMs` is never renewed. */
async function takeAndDie(lockMs: number): Promise<string> {
  const dead = new Worker<QueuedRun>(QUEUE_NAME, null, { connection: h.redis, prefix, lockDuration: lockMs });
  closers.push(() => dead.close());
  const taken = await dead.getNextJob(randomUUID());
  expect(taken).toBeDefined();
  return taken!.id!;
}

it(
  'a run BullMQ gives up after its worker stalled past maxStalledCount is recorded failed with RUN_STALLED, ' +
    'alerted, and found by replay --failed',
  async () => {
    const config = h.config({
      [job]: { connection: 'sim', report: { mandant: 7777, name: 'Sales/Orders' }, target: { table: 'orders' } },
    });
    const { runKey, jobId, interval } = await enqueueManual(queue, config, job, {}, undefined, undefined, h.pool);
    expect(await takeAndDie(500)).toBe(jobId);
    // The dead worker's attempt, closed by the janitor as an orphan.
    const orphan = randomUUID();
    await insertTestAttempt(h.pool, {
      attemptId: orphan,
      job,
      runKey,
      targetTable: `${h.schema}.orders`,
      worker: 'dead:1',
    });
    await failAttempt(h.pool, orphan, {
      status: 'interrupted',
      stage: 'load',
      errorKind: 'ORPHANED',
      retryable: true,
      message: 'orphaned: the process that ran attempt 1 (dead:1) ended without finishing it',
    });
    const failed: { runKey: string; attemptId: string; error: Error }[] = [];
    const worker: RunWorker = workerOf(h, config, {
      prefix,
      lockDurationMs: 1_000,
      stalledIntervalMs: 300,
      // The first stall is one too many: BullMQ fails the queue job when this worker next takes it.
      maxStalledCount: 0,
      workerName: 'alive:2',
      alerts: { succeeded: async () => undefined, failed: async (o) => void failed.push(o) },
    });
    closers.push(() => worker.close(0));
    const queued = await waitForQueueJob(
      queue,
      jobId,
      'failed',
      'the queue job failed by the stalled-job check',
      30_000,
    );
    expect(queued.failedReason).toMatch(/stalled more than allowable limit/);
    const run = await waitFor('the run recorded failed', async () => {
      const r = await getRun(h.pool, job, runKey);
      return r?.status === 'failed' && r;
    });
    expect(run.attempts).toBe(2);
    const { rows } = await h.pool.query<{
      attempt: number;
      status: string;
      worker: string;
      error_kind: string;
      retryable: boolean;
      message: string;
      request: unknown;
    }>(
      `SELECT a.attempt, a.status, a.worker, e.error_kind, e.retryable, e.message, a.request
         FROM etl.attempts a JOIN etl.run_errors e USING (attempt_id) WHERE a.job = $1 ORDER BY a.attempt`,
      [job],
    );
    expect(rows.map((r) => [r.attempt, r.status, r.error_kind, r.retryable])).toEqual([
      [1, 'interrupted', 'ORPHANED', true],
      [2, 'failed', 'RUN_STALLED', false],
    ]);
    expect(rows[1]!.worker).toBe('alive:2');
    // It stands for the interval its run was queued with, as an attempt of it would have; it sent no request.
    expect(rows[1]!.request).toEqual({
      logicalStart: interval.logicalStart.toISOString(),
      logicalEnd: interval.logicalEnd.toISOString(),
      tick: interval.logicalEnd.toISOString(),
    });
    const message = rows[1]!.message;
    expect(message).toContain(`the queue gave this run up (queue job ${jobId}: job stalled more than allowable limit)`);
    expect(message).toContain('1 of its 1 attempts before were orphaned');
    expect(message).toContain('nothing was committed and it is not tried again');
    expect(message).toContain(`report-etl replay ${runKey} --job ${job}`);
    await waitFor('the failed alert', () => failed.length === 1);
    expect(failed[0]).toMatchObject({ runKey });
    expect((failed[0]!.error as { code?: string }).code).toBe('RUN_STALLED');
    expect((await failedRunsToReplay(h.pool, { job })).map((r) => r.run_key)).toEqual([runKey]);
  },
  60_000,
);

it('a run given up of a replaceRange job keeps its period: a later success of that period supersedes it', async () => {
  const periodJob = `${jp}_period`;
  const from = '%{logicalEnd-3d:yyyy-MM-dd}';
  const to = '%{logicalEnd:yyyy-MM-dd}';
  const config = h.config({
    [periodJob]: jobEntry(
      { name: 'Finance/Bookings', parameters: { FROM: from, TO: to } },
      {
        table: `${h.schema}.bookings_period`,
        mode: 'replace',
        columns: { buchungstag: 'date' },
        replaceRange: { column: 'buchungstag', from, to },
      },
    ),
  });
  // Given up (RUN_STALLED, as recordStalledOut and the janitor record it) at its tick of 03:00 on 10 January.
  const runKey = randomUUID();
  const attemptId = await recordUnrunFailure(
    h.pool,
    config,
    { succeeded: async () => undefined, failed: async () => undefined },
    {
      job: periodJob,
      runKey,
      trigger: 'schedule',
      scheduledFor: new Date('2026-01-10T03:00:00Z'),
      error: new EtlError('RUN_STALLED', 'the queue gave this run up', { retryable: false, stage: 'start' }),
      worker: 'alive:2',
    },
  );
  const { rows } = await h.pool.query<{ request: { replaceRange?: unknown } }>(
    'SELECT request FROM etl.attempts WHERE attempt_id = $1',
    [attemptId],
  );
  expect(rows[0]!.request.replaceRange).toEqual({ column: 'buchungstag', from: '2026-01-07', to: '2026-01-10' });
  // A later run of the same period [2026-01-07, 2026-01-10) succeeds: nothing is left to replay.
  const later = await h.run(config, periodJob, { scheduledFor: '2026-01-10T05:00:00.000Z' });
  expect(later.status).toBe('succeeded');
  const failed = await failedRunsToReplay(h.pool, { job: periodJob });
  expect(failed.map((f) => [f.run_key, f.superseded_by_run_key])).toEqual([[runKey, later.runKey]]);
}, 60_000);
