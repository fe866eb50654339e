/**
 * Replay of failed runs from the queue: the same logical run (same run key, so an
 * append load stays exactly-once), the same logical time and explicit parameters (etl.run_requests), trigger
 * 'replay'. Used by `report-etl replay` and the admin page's replay button. `replay --failed` skips superseded
 * failures (a later logical run of the same job succeeded into the same replace or merge target; precisely defined
 * at failedRunsToReplay in src/history/run-list.ts) unless asked to include them.
 */
import type pg from 'pg';
import type { Queue } from 'bullmq';
import type { EtlConfig } from '../config/schema.ts';
import { EtlError } from '../errors.ts';
import { getAttempt, hasSucceeded } from '../history/attempts.ts';
import { replayQueueJobId } from './names.ts';
import { enqueueRun, retryOf, type RunQueue } from './queue.ts';
import type { RunRequest } from '../vocabulary.ts';
import { failedRunsToReplay, type FailedRunToReplay } from '../history/run-list.ts';
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
 * Queues a replay of the failed (or interrupted) attempt `attemptId` (its etl.runs.run_id, the "run id" users see).
 * Replaying the same attempt twice queues it once.
 * @returns the BullMQ job id of the replay
 * @throws EtlError (code INTERNAL, not retryable) when there is no such run, or it or a later attempt of its run succeeded
 */
export async function replayRun(deps: ReplayDeps, attemptId: string): Promise<{ jobId: string }> {
  const run = UUID.test(attemptId) ? await getAttempt(deps.pool, attemptId) : undefined;
  if (!run) throw new EtlError('INTERNAL', `no run ${attemptId} in etl.runs`, { retryable: false });
  if (run.status === 'succeeded') throw new EtlError('INTERNAL', `run ${attemptId} succeeded: nothing to replay`, { retryable: false });
  if (run.status === 'running') throw new EtlError('INTERNAL', `run ${attemptId} is still running`, { retryable: false });
  if (await hasSucceeded(deps.pool, run.job, run.run_key)) {
    throw new EtlError('INTERNAL', `run ${attemptId} failed, but a later attempt of the same run (${run.run_key}) succeeded: nothing to replay`, { retryable: false });
  }
  const request = await getRunRequest(deps.pool, run.job, run.run_key);
  const req: RunRequest = { job: run.job, trigger: 'replay', runKey: run.run_key };
  const scheduledFor = request?.scheduledFor ?? run.scheduled_for ?? undefined;
  if (scheduledFor) req.scheduledFor = scheduledFor.toISOString();
  if (request?.logicalStart) req.logicalStart = request.logicalStart.toISOString();
  if (request?.logicalEnd) req.logicalEnd = request.logicalEnd.toISOString();
  if (request?.parameters) req.parameters = request.parameters;
  const retry = deps.config?.jobs[run.job] ? retryOf(deps.config, run.job) : { attempts: 1, backoffMs: 0 };
  const { jobId } = await enqueueRun(deps.queue, req, { jobId: replayQueueJobId(request?.queueJobId ?? run.run_key, run.run_id), ...retry });
  return { jobId };
}

/** What `replay --failed` would do with the failed runs it found (see {@link planFailedReplays}). */
export interface FailedReplayPlan {
  /** Failed runs to queue again, newest first. */
  toQueue: FailedRunToReplay[];
  /**
   * Failed runs skipped because a later logical run of the same job succeeded into the same replace or merge
   * target (`superseded_by_*` says which); queued too with `includeSuperseded`.
   */
  superseded: FailedRunToReplay[];
  /** Failed runs the queue still retries (their queue job is waiting, delayed or active): left to the queue. */
  stillRetrying: FailedRunToReplay[];
}

/** Filter and choices of {@link planFailedReplays} and {@link replayFailed}. */
export interface ReplayFailedOptions {
  /** Only this job. */
  job?: string | undefined;
  /** Only failures whose newest attempt started at or after this instant. */
  since?: Date | undefined;
  /** Queue superseded failures too (default false: they are skipped). */
  includeSuperseded?: boolean | undefined;
}

/**
 * Sorts every logical run whose newest attempt failed and that never succeeded into what to queue again, what is
 * superseded (see failedRunsToReplay in src/history/run-list.ts for the precise definition: a later logical run of
 * the same job succeeded into the same replace or merge target, so a replay would overwrite newer rows with older
 * ones) and what the queue still retries. Queues nothing: `replay --failed --dry-run` prints this.
 */
export async function planFailedReplays(deps: ReplayDeps, o: ReplayFailedOptions = {}): Promise<FailedReplayPlan> {
  const plan: FailedReplayPlan = { toQueue: [], superseded: [], stillRetrying: [] };
  for (const run of await failedRunsToReplay(deps.pool, { job: o.job, since: o.since })) {
    // Still being retried by the queue: a replay now would only race the next attempt.
    const request = await getRunRequest(deps.pool, run.job, run.run_key);
    const queued = request ? await deps.queue.getJob(request.queueJobId) : undefined;
    if (queued && PENDING.has(await queued.getState())) plan.stillRetrying.push(run);
    else if (run.superseded_by_run_id && !o.includeSuperseded) plan.superseded.push(run);
    else plan.toQueue.push(run);
  }
  return plan;
}

/**
 * Queues a replay of every logical run whose newest attempt failed and that never succeeded, except superseded ones
 * (unless `includeSuperseded`) and runs the queue still retries (see {@link planFailedReplays}).
 * @returns the BullMQ job ids queued (one per logical run)
 */
export async function replayFailed(deps: ReplayDeps, o: ReplayFailedOptions = {}): Promise<string[]> {
  const ids: string[] = [];
  for (const run of (await planFailedReplays(deps, o)).toQueue) ids.push((await replayRun(deps, run.run_id)).jobId);
  return ids;
}
