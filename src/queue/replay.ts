/**
 * Replay of failed runs from the queue (issue 4 "Replay and history"): the same logical run (same run key, so an
 * append load stays exactly-once), the same logical time and explicit parameters (etl.run_requests), trigger
 * 'replay'. Used by `report-etl replay` and the admin page's replay button.
 */
import type pg from 'pg';
import type { Queue } from 'bullmq';
import type { EtlConfig } from '../config/schema.ts';
import { EtlError } from '../errors.ts';
import { getAttempt, hasSucceeded } from '../history/attempts.ts';
import { replayJobId } from './names.ts';
import { enqueueRun, retryOf, type RunQueue } from './queue.ts';
import type { RunRequest } from '../vocabulary.ts';
import { failedRunsToReplay } from '../history/run-list.ts';
import { getRunRequest } from '../history/run-requests.ts';

/** What replays need. */
export interface ReplayDeps {
  queue: RunQueue;
  pool: pg.Pool;
  /** jobs.yaml, for the job's attempts and backoff; without it a replay gets one attempt. */
  config?: EtlConfig;
}

const PENDING = new Set(['waiting', 'delayed', 'active', 'prioritized', 'waiting-children']);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Queues a replay of the failed (or interrupted) attempt `runId`. Replaying the same attempt twice queues it once.
 * @returns the BullMQ job id of the replay
 * @throws EtlError (code INTERNAL, not retryable) when there is no such run, or it or a later attempt of its run succeeded
 */
export async function replayRun(deps: ReplayDeps, runId: string): Promise<{ jobId: string }> {
  const run = UUID.test(runId) ? await getAttempt(deps.pool, runId) : undefined;
  if (!run) throw new EtlError('INTERNAL', `no run ${runId} in etl.runs`, { retryable: false });
  if (run.status === 'succeeded') throw new EtlError('INTERNAL', `run ${runId} succeeded: nothing to replay`, { retryable: false });
  if (run.status === 'running') throw new EtlError('INTERNAL', `run ${runId} is still running`, { retryable: false });
  if (await hasSucceeded(deps.pool, run.job, run.run_key)) {
    throw new EtlError('INTERNAL', `run ${runId} failed, but a later attempt of the same run (${run.run_key}) succeeded: nothing to replay`, { retryable: false });
  }
  const request = await getRunRequest(deps.pool, run.job, run.run_key);
  const req: RunRequest = { job: run.job, trigger: 'replay', runKey: run.run_key };
  const scheduledFor = request?.scheduledFor ?? run.scheduled_for ?? undefined;
  if (scheduledFor) req.scheduledFor = scheduledFor.toISOString();
  if (request?.logicalStart) req.logicalStart = request.logicalStart.toISOString();
  if (request?.logicalEnd) req.logicalEnd = request.logicalEnd.toISOString();
  if (request?.parameters) req.parameters = request.parameters;
  const retry = deps.config?.jobs[run.job] ? retryOf(deps.config, run.job) : { attempts: 1, backoffMs: 0 };
  const { jobId } = await enqueueRun(deps.queue, req, { jobId: replayJobId(request?.queueJobId ?? run.run_key, run.run_id), ...retry });
  return { jobId };
}

/**
 * Queues a replay of every logical run whose newest attempt failed and that never succeeded.
 * Runs the queue still retries (their job is waiting, delayed or active) are left to the queue.
 * @param filter only this job; only runs started since
 * @returns the BullMQ job ids queued (one per logical run)
 */
export async function replayFailed(deps: ReplayDeps, filter: { job?: string; since?: Date } = {}): Promise<string[]> {
  const ids: string[] = [];
  for (const run of await failedRunsToReplay(deps.pool, filter)) {
    // Still being retried by the queue: a replay now would only race the next attempt.
    const request = await getRunRequest(deps.pool, run.job, run.run_key);
    const queued = request ? await deps.queue.getJob(request.queueJobId) : undefined;
    if (queued && PENDING.has(await queued.getState())) continue;
    ids.push((await replayRun(deps, run.run_id)).jobId);
  }
  return ids;
}
