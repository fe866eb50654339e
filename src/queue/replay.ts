/**
 * Replays of failed runs (docs/operations.md "Replaying failed runs"): the same logical run, run key, logical time and
 * parameters, from its etl.runs row, with trigger `replay`.
 */
import type pg from 'pg';
import type { EtlConfig } from '../config/schema.ts';
import { EtlError, type ErrorCode } from '../errors.ts';
import { hasSucceeded, newestAttempt } from '../history/attempts.ts';
import { listRunErrors } from '../history/attempt-list.ts';
import { replayQueueJobId } from './names.ts';
import { enqueueRun, retryOf, type RunQueue } from './queue.ts';
import type { RunRequest } from '../vocabulary.ts';
import { failedRunsToReplay, type FailedRunToReplay } from '../history/run-list.ts';
import { getRun } from '../history/runs.ts';
import { getArchive, newestCompleteArchive, type AttemptArchive } from '../history/page-archive.ts';
import { jobOfSubject } from '../config/mandants.ts';

/** What replays need. */
export interface ReplayDeps {
  queue: RunQueue;
  pool: pg.Pool;
  /** For the job's attempts and backoff; without it a replay gets one attempt. */
  config?: EtlConfig;
}

const PENDING = new Set(['waiting', 'delayed', 'active', 'prioritized', 'waiting-children']);

/** A logical run. */
export type RunRef = { job: string; runKey: string };

/**
 * Why {@link replayRun} refused, in its error's `details.refusal`: no such run, no attempt yet, one still running, a
 * success, no guard stopped it (`--accept-guard`), job gone from jobs.yaml, no complete kept pages (`--from-pages`).
 */
export type ReplayRefusal =
  'no-run' | 'no-attempt' | 'running' | 'succeeded' | 'not-guarded' | 'job-gone' | 'no-kept-pages';

/** The refusal a {@link replayRun} error names, if it is one. */
export function replayRefusalOf(err: unknown): ReplayRefusal | undefined {
  const refusal = err instanceof EtlError ? err.details?.refusal : undefined;
  return typeof refusal === 'string' ? (refusal as ReplayRefusal) : undefined;
}

/** The error of a refused replay, not retryable. */
function refused(refusal: ReplayRefusal, message: string, code: ErrorCode = 'INTERNAL'): EtlError {
  return new EtlError(code, message, { retryable: false, details: { refusal } });
}

/**
 * Queues a replay of `ref`, whose newest attempt failed or was interrupted, or whose rows were reverted; the queue
 * job id names that attempt ({@link replayQueueJobId}).
 * @param opts.acceptGuard load past the target's guards (docs/loaded-tables.md "Guards and schema changes")
 * @returns the replay's queue job id, the attempt it replays, and whether that attempt's rows were reverted
 * @throws EtlError, not retryable: INTERNAL when there is no such run, no finished attempt, a running one, a
 *   success not reverted, or `acceptGuard` for a run its guard did not stop; CONFIG_INVALID for a job gone
 */
export async function replayRun(
  deps: ReplayDeps,
  ref: RunRef,
  opts: { acceptGuard?: boolean; fromPages?: boolean } = {},
): Promise<{ jobId: string; attemptId: string; reverted: boolean; pagesOf?: AttemptArchive | undefined }> {
  const named = `run ${ref.runKey} of job ${ref.job}`;
  const [run, newest] = await Promise.all([
    getRun(deps.pool, ref.job, ref.runKey),
    newestAttempt(deps.pool, ref.job, ref.runKey),
  ]);
  if (!run) throw refused('no-run', `no ${named} in etl.runs`);
  if (!newest)
    throw refused(
      'no-attempt',
      `${named} has no attempt yet (it is queued or waits for a report slot): nothing to replay`,
    );
  if (newest.status === 'running') throw refused('running', `${named} is still running (attempt ${newest.attempt})`);
  // A reverted append run (report-etl revert) has no success left: its replay appends it again.
  if (await hasSucceeded(deps.pool, ref.job, ref.runKey))
    throw refused('succeeded', `${named} succeeded: nothing to replay`);
  // --accept-guard is for a run its guard stopped: on any other failure it would accept nothing the user has seen.
  if (opts.acceptGuard) {
    const kinds = (await listRunErrors(deps.pool, newest.attempt_id)).map((e) => e.error_kind);
    if (!kinds.includes('GUARD_TRIPPED')) {
      const failed = `its attempt ${newest.attempt} failed with ${kinds[0] ?? newest.status}`;
      throw refused(
        'not-guarded',
        `${named} was not stopped by its target's guard (${failed}): replay it without --accept-guard`,
      );
    }
  }
  // A worker would drop a replay of a job gone from jobs.yaml: refused here, at once.
  if (deps.config && !jobOfSubject(deps.config, run.job)) {
    throw refused(
      'job-gone',
      `${named} cannot be replayed: job ${run.job} is no longer in jobs.yaml (add it back to replay its runs)`,
      'CONFIG_INVALID',
    );
  }
  const pagesOf = await keptPagesToReplay(deps, ref, newest.attempt_id, opts);
  const req: RunRequest = { job: run.job, trigger: 'replay', runKey: run.run_key };
  const scheduledFor = run.scheduled_for ?? newest.scheduled_for;
  if (scheduledFor) req.scheduledFor = scheduledFor.toISOString();
  if (run.logical_start) req.logicalStart = run.logical_start.toISOString();
  if (run.logical_end) req.logicalEnd = run.logical_end.toISOString();
  if (run.parameters) req.parameters = run.parameters;
  if (opts.acceptGuard) req.acceptGuard = true;
  if (pagesOf) req.pagesOf = pagesOf.attemptId;
  const { jobId } = await enqueueRun(deps.queue, req, {
    jobId: replayQueueJobId(run.queue_job_id ?? run.run_key, newest.attempt_id, opts.acceptGuard, !!pagesOf),
    ...(deps.config ? retryOf(deps.config, run.job) : { attempts: 1, backoffMs: 0 }),
    history: deps.pool,
  });
  return { jobId, attemptId: newest.attempt_id, reverted: newest.status === 'succeeded', pagesOf };
}

/**
 * The kept pages a replay loads (docs/operations.md "Kept pages"): with `fromPages`, the run's newest complete ones;
 * with `acceptGuard`, those of the tripped attempt when it kept them (the pages reviewed), else none.
 * @throws EtlError INTERNAL (not retryable) for `fromPages` when the run kept no complete pages
 */
async function keptPagesToReplay(
  deps: ReplayDeps,
  ref: RunRef,
  newestAttemptId: string,
  opts: { acceptGuard?: boolean; fromPages?: boolean },
): Promise<AttemptArchive | undefined> {
  if (opts.fromPages) {
    const kept = await newestCompleteArchive(deps.pool, ref.job, ref.runKey);
    if (!kept)
      throw refused(
        'no-kept-pages',
        `run ${ref.runKey} of job ${ref.job} has no kept pages (target.archive was off, its reading stopped early, ` +
          'or keepDays ran out): replay it without --from-pages',
      );
    return kept;
  }
  if (!opts.acceptGuard) return undefined;
  const tripped = await getArchive(deps.pool, newestAttemptId);
  return tripped?.complete ? tripped : undefined;
}

/** What `replay --failed` does with the failed runs it found, each list newest first. */
export interface FailedReplayPlan {
  toQueue: FailedRunToReplay[];
  /** Skipped unless `includeSuperseded` (history/superseded.ts). */
  superseded: FailedRunToReplay[];
  /** Left to the queue, which still retries them. */
  stillRetrying: FailedRunToReplay[];
  /** Of jobs no longer in jobs.yaml (when the config is known). */
  jobGone: FailedRunToReplay[];
}

/** Filter and choices of {@link planFailedReplays}. */
export interface ReplayFailedOptions {
  job?: string | undefined;
  /** Only failures whose newest attempt started since. */
  since?: Date | undefined;
  includeSuperseded?: boolean | undefined;
}

/** Sorts the runs whose newest attempt failed and that never succeeded into a {@link FailedReplayPlan}. */
export async function planFailedReplays(deps: ReplayDeps, o: ReplayFailedOptions = {}): Promise<FailedReplayPlan> {
  const plan: FailedReplayPlan = { toQueue: [], superseded: [], stillRetrying: [], jobGone: [] };
  for (const run of await failedRunsToReplay(deps.pool, { job: o.job, since: o.since })) {
    if (deps.config && !jobOfSubject(deps.config, run.job)) {
      plan.jobGone.push(run);
      continue;
    }
    // A replay now would race the queue's next attempt, or a replay of this attempt queued already.
    const base = run.queue_job_id ?? run.run_key;
    const ids = [
      ...(run.queue_job_id !== null ? [run.queue_job_id] : []),
      replayQueueJobId(base, run.attempt_id),
      replayQueueJobId(base, run.attempt_id, true),
    ];
    if (await anyPending(deps.queue, ids)) plan.stillRetrying.push(run);
    else if (run.superseded_by_run_key !== null && !o.includeSuperseded) plan.superseded.push(run);
    else plan.toQueue.push(run);
  }
  return plan;
}

/** Whether any of the queue jobs `ids` is still to run. */
async function anyPending(queue: ReplayDeps['queue'], ids: readonly string[]): Promise<boolean> {
  for (const id of ids) {
    const job = await queue.getJob(id);
    if (job && PENDING.has(await job.getState())) return true;
  }
  return false;
}
