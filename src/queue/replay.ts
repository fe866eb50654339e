/**
 * Replay of failed runs from the queue: the same logical run (same run key, so an append load stays exactly-once),
 * the same logical time and explicit parameters (its etl.runs row), trigger 'replay'. Used by `report-etl replay`
 * and the admin pages' Replay buttons. `replay --failed` skips superseded failures (a later logical run of the same
 * job succeeded into the same replace or merge target; precisely defined at failedRunsToReplay in
 * src/history/run-list.ts) unless asked to include them.
 */
import type pg from 'pg';
import type { EtlConfig } from '../config/schema.ts';
import { EtlError } from '../errors.ts';
import { hasSucceeded, newestAttempt } from '../history/attempts.ts';
import { listRunErrors } from '../history/attempt-list.ts';
import { replayQueueJobId } from './names.ts';
import { enqueueRun, retryOf, type RunQueue } from './queue.ts';
import type { RunRequest } from '../vocabulary.ts';
import { failedRunsToReplay, type FailedRunToReplay } from '../history/run-list.ts';
import { getRun } from '../history/runs.ts';

/** What replays need. */
export interface ReplayDeps {
  queue: RunQueue;
  pool: pg.Pool;
  /** jobs.yaml, for the job's attempts and backoff; without it a replay gets one attempt. */
  config?: EtlConfig;
}

const PENDING = new Set(['waiting', 'delayed', 'active', 'prioritized', 'waiting-children']);

/** A logical run: its jobs.yaml job and run key. */
export interface RunRef {
  job: string;
  runKey: string;
}

/**
 * Queues a replay of the logical run `ref`, whose newest attempt failed or was interrupted, or whose rows were
 * reverted (README "Commands": revert). The queue job id names
 * that attempt, so replaying the run twice before its replay made a new attempt queues it once.
 * @param opts.acceptGuard load past the target's guards (README "Guards and schema changes"); recorded on the attempt
 * @returns the BullMQ job id of the replay, the newest attempt it replays, and whether that attempt's rows were
 *   reverted (else it failed or was interrupted)
 * @throws EtlError (code INTERNAL, not retryable) when there is no such run, it has no finished attempt yet, its
 *   newest attempt is running, or an attempt of it succeeded (and was not reverted since), or `acceptGuard` is asked
 *   for a run whose newest attempt was not stopped by its guard (GUARD_TRIPPED)
 */
export async function replayRun(
  deps: ReplayDeps,
  ref: RunRef,
  opts: { acceptGuard?: boolean } = {},
): Promise<{ jobId: string; attemptId: string; reverted: boolean }> {
  const named = `run ${ref.runKey} of job ${ref.job}`;
  const [run, newest] = await Promise.all([
    getRun(deps.pool, ref.job, ref.runKey),
    newestAttempt(deps.pool, ref.job, ref.runKey),
  ]);
  if (!run) throw new EtlError('INTERNAL', `no ${named} in etl.runs`, { retryable: false });
  if (!newest)
    throw new EtlError(
      'INTERNAL',
      `${named} has no attempt yet (it is queued or waits for a report slot): nothing to replay`,
      { retryable: false },
    );
  if (newest.status === 'running')
    throw new EtlError('INTERNAL', `${named} is still running (attempt ${newest.attempt})`, { retryable: false });
  // A reverted append run (report-etl revert) has no success left: its replay appends it again.
  if (await hasSucceeded(deps.pool, ref.job, ref.runKey)) {
    throw new EtlError('INTERNAL', `${named} succeeded: nothing to replay`, { retryable: false });
  }
  // --accept-guard is for a run its guard stopped: on any other failure it would accept nothing the user has seen.
  if (opts.acceptGuard) {
    const kinds = (await listRunErrors(deps.pool, newest.attempt_id)).map((e) => e.error_kind);
    if (!kinds.includes('GUARD_TRIPPED')) {
      throw new EtlError(
        'INTERNAL',
        `${named} was not stopped by its target's guard (its attempt ${newest.attempt} failed with ${kinds[0] ?? newest.status}): replay it without --accept-guard`,
        { retryable: false },
      );
    }
  }
  // A job that left jobs.yaml has nothing to run its replay: a worker would drop it, so it is refused here, at once.
  if (deps.config && !deps.config.jobs[run.job]) {
    throw new EtlError(
      'CONFIG_INVALID',
      `${named} cannot be replayed: job ${run.job} is no longer in jobs.yaml (add it back to replay its runs)`,
      { retryable: false },
    );
  }
  const req: RunRequest = { job: run.job, trigger: 'replay', runKey: run.run_key };
  const scheduledFor = run.scheduled_for ?? newest.scheduled_for;
  if (scheduledFor) req.scheduledFor = scheduledFor.toISOString();
  if (run.logical_start) req.logicalStart = run.logical_start.toISOString();
  if (run.logical_end) req.logicalEnd = run.logical_end.toISOString();
  if (run.parameters) req.parameters = run.parameters;
  if (opts.acceptGuard) req.acceptGuard = true;
  const retry = deps.config?.jobs[run.job] ? retryOf(deps.config, run.job) : { attempts: 1, backoffMs: 0 };
  const { jobId } = await enqueueRun(deps.queue, req, {
    jobId: replayQueueJobId(run.queue_job_id ?? run.run_key, newest.attempt_id, opts.acceptGuard),
    ...retry,
  });
  return { jobId, attemptId: newest.attempt_id, reverted: newest.status === 'succeeded' };
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
  /** Failed runs of jobs no longer in jobs.yaml (when the config is known): nothing could run their replay. */
  jobGone: FailedRunToReplay[];
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
  const plan: FailedReplayPlan = { toQueue: [], superseded: [], stillRetrying: [], jobGone: [] };
  for (const run of await failedRunsToReplay(deps.pool, { job: o.job, since: o.since })) {
    if (deps.config && !deps.config.jobs[run.job]) {
      plan.jobGone.push(run);
      continue;
    }
    // Still being retried by the queue: a replay now would only race the next attempt.
    // A replay of its newest attempt queued and not yet taken by a worker is pending too (with or without --accept-guard).
    const queueJobId = (await getRun(deps.pool, run.job, run.run_key))?.queue_job_id;
    const base = queueJobId ?? run.run_key;
    const ids = [
      ...(queueJobId != null ? [queueJobId] : []),
      replayQueueJobId(base, run.attempt_id),
      replayQueueJobId(base, run.attempt_id, true),
    ];
    if (await anyPending(deps.queue, ids)) plan.stillRetrying.push(run);
    else if (run.superseded_by_run_key !== null && !o.includeSuperseded) plan.superseded.push(run);
    else plan.toQueue.push(run);
  }
  return plan;
}

/** Whether any of the queue jobs `ids` is waiting, delayed or active. */
async function anyPending(queue: ReplayDeps['queue'], ids: readonly string[]): Promise<boolean> {
  for (const id of ids) {
    const job = await queue.getJob(id);
    if (job && PENDING.has(await job.getState())) return true;
  }
  return false;
}

/**
 * Queues a replay of every logical run whose newest attempt failed and that never succeeded, except superseded ones
 * (unless `includeSuperseded`) and runs the queue still retries (see {@link planFailedReplays}).
 * @returns the BullMQ job ids queued (one per logical run)
 */
export async function replayFailed(deps: ReplayDeps, o: ReplayFailedOptions = {}): Promise<string[]> {
  const ids: string[] = [];
  for (const run of (await planFailedReplays(deps, o)).toQueue)
    ids.push((await replayRun(deps, { job: run.job, runKey: run.run_key })).jobId);
  return ids;
}
