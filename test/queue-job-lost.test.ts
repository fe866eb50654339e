/**
 * A run queued but not yet begun whose queue job vanishes (Redis lost its data) is not lost: the janitor records it
 * failed with QUEUE_JOB_LOST, a text saying so and the replay command, and sends the failed alert
 * (docs/operations.md "Redis in production"). Real PostgreSQL and Redis; no worker runs.
 */
import { expect, it } from 'vitest';
import type { AlertSender } from '../src/alerts/webhook-sender.ts';
import { failedRunsToReplay } from '../src/history/run-list.ts';
import { getRun, recordRunRequest } from '../src/history/runs.ts';
import { QUEUED_GRACE_MS } from '../src/queue/janitor.ts';
import { enqueueManual } from '../src/queue/manual-run.ts';
import { uniqueName } from './support/env.ts';
import { deleteKeys, janitorOf, useQueueBench } from './support/queue-env.ts';

const jp = uniqueName('qlost');
const prefix = uniqueName('qlostq');
const { h, queue } = useQueueBench(prefix, jp);
const job = `${jp}_orders`;

it('records a queued run whose queue job vanished before a worker began it failed, and alerts it', async () => {
  const config = h.config({
    [job]: { connection: 'sim', report: { mandant: 7777, name: 'Sales/Orders' }, target: { table: 'orders' } },
  });
  const sent: { m: Parameters<AlertSender['send']>[0]; events: Parameters<AlertSender['send']>[1] }[] = [];
  const alerts: AlertSender = {
    send: (m, events) => void sent.push({ m, events }),
    flush: async () => true,
    close: async () => undefined,
  };
  let clock = new Date();
  const janitor = janitorOf(h, config, { alerts, prefix, now: () => clock });
  try {
    const { runKey, jobId, interval } = await enqueueManual(queue, config, job, {}, undefined, undefined, h.pool);
    const queued = await getRun(h.pool, job, runKey);
    expect(queued).toMatchObject({ attempts: 0, status: null, queue_job_id: jobId, trigger: 'manual' });
    expect(queued!.queued_at).toBeInstanceOf(Date);

    // Past the grace period while its queue job is still there: nothing to do.
    clock = new Date(Date.now() + QUEUED_GRACE_MS + 60_000);
    expect((await janitor.sweep()).lostQueued).toEqual([]);

    // Redis loses the installation's keys (a restart without persistence).
    await deleteKeys(h.redis, prefix);
    expect(await queue.getJob(jobId)).toBeUndefined();
    // Within the grace period the janitor leaves it.
    clock = new Date();
    expect((await janitor.sweep()).lostQueued).toEqual([]);
    expect((await getRun(h.pool, job, runKey))!.status).toBeNull();

    clock = new Date(Date.now() + QUEUED_GRACE_MS + 60_000);
    const result = await janitor.sweep();
    expect(result.leased).toBe(true);
    expect(result.lostQueued).toHaveLength(1);
    expect(result.lostQueued[0]).toMatchObject({ job, runKey, queueJobId: jobId });
    const { attemptId } = result.lostQueued[0]!;

    expect(await getRun(h.pool, job, runKey)).toMatchObject({ attempts: 1, status: 'failed' });
    const { rows: errors } = await h.pool.query<{ error_kind: string; retryable: boolean; message: string }>(
      'SELECT error_kind, retryable, message FROM etl.run_errors WHERE attempt_id = $1',
      [attemptId],
    );
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ error_kind: 'QUEUE_JOB_LOST', retryable: false });
    expect(errors[0]!.message).toContain(`queue job ${jobId}`);
    expect(errors[0]!.message).toContain('vanished from Redis before a worker began it');
    expect(errors[0]!.message).toContain(`report-etl replay ${runKey} --job ${job}`);
    // It stands for the interval its run was queued with, as an attempt of it would have; it sent no request.
    const { rows: asked } = await h.pool.query<{ request: unknown }>(
      'SELECT request FROM etl.attempts WHERE attempt_id = $1',
      [attemptId],
    );
    expect(asked[0]!.request).toEqual({
      logicalStart: interval.logicalStart.toISOString(),
      logicalEnd: interval.logicalEnd.toISOString(),
      tick: interval.logicalEnd.toISOString(),
    });

    expect(sent).toHaveLength(1);
    expect(sent[0]!.events).toEqual(['failed']);
    expect(sent[0]!.m).toMatchObject({ job, runKey, attemptId, errorKind: 'QUEUE_JOB_LOST' });

    // `replay --failed` finds it; a second sweep records nothing more.
    expect((await failedRunsToReplay(h.pool, { job })).map((r) => r.run_key)).toEqual([runKey]);
    expect((await janitor.sweep()).lostQueued).toEqual([]);
    expect(sent).toHaveLength(1);
  } finally {
    await janitor.close();
  }
});

it('a run recorded at its enqueue gets created_at when a worker begins it, so its wait stays measurable', async () => {
  const config = h.config({
    [job]: { connection: 'sim', report: { mandant: 7777, name: 'Sales/Orders' }, target: { table: 'orders' } },
  });
  const { runKey, jobId } = await enqueueManual(queue, config, job, { K: 'v' }, undefined, undefined, h.pool);
  const queued = (await getRun(h.pool, job, runKey))!;
  await h.pool.query('UPDATE etl.runs SET created_at = queued_at - $3::interval WHERE job = $1 AND run_key = $2', [
    job,
    runKey,
    '1 hour',
  ]);
  // What the worker records as it takes the queue job.
  await recordRunRequest(h.pool, {
    job,
    runKey,
    queueJobId: jobId,
    trigger: 'manual',
    logicalStart: queued.logical_start ?? undefined,
    logicalEnd: queued.logical_end ?? undefined,
    parameters: { K: 'v' },
    queuedAt: queued.queued_at ?? undefined,
  });
  const begun = (await getRun(h.pool, job, runKey))!;
  expect(begun.queued_at).toEqual(queued.queued_at);
  expect(begun.parameters).toEqual({ K: 'v' });
  expect(begun.created_at.getTime()).toBeGreaterThanOrEqual(queued.queued_at!.getTime());
});
