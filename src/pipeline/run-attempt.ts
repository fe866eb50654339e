/**
 * runAttempt(): one attempt of a run, from its record in the run history to the committed rows and the deleted
 * report job (docs/architecture.md "Flow of one run"). The steps are in attempt-steps.ts, each with its stage; this
 * file only puts them in order. Knows nothing of BullMQ; cancellable by AbortSignal (docs/architecture.md
 * "Lifecycle").
 */
import type { Attempt, AttemptOptions, AttemptResult } from './attempt.ts';
import {
  checkMayRun,
  clearDeadAttempts,
  deleteReportJob,
  finishAlreadyLoaded,
  loadAndCommit,
  openReportClient,
  recordAttempt,
  recordFailedAttempt,
  startReportJob,
  waitForReportJob,
  waitForSlot,
  type ReportClientLease,
} from './attempt-steps.ts';
import { deadlinesOf, startRunDeadline } from './deadlines.ts';

export { AttemptFailedError, defaultWorkerName, type AttemptOptions, type AttemptResult, type ExclusiveLock } from './attempt.ts';

/**
 * Runs one attempt of a run of `o.job`: wait for a report slot → record it → check it may run → start the report job → wait for it → load
 * and commit → delete the report job, in every outcome once started. From its start the attempt has the job's
 * maxRunMs to commit, each page its pageTimeoutMs (docs/architecture.md "Limits").
 * @returns figures of the committed load (status `already-loaded` when the run's rows were appended already)
 * @throws AttemptFailedError (already recorded as failed or interrupted; the target is untouched and the report
 *   job deleted): `.error` is the typed cause (RUN_TIMEOUT, PAGE_TIMEOUT for the deadlines), `.retryable` says
 *   whether another attempt may help
 * @throws the database's error when the attempt could not even be recorded; AbortedError when aborted while it
 *   waited for a slot (nothing recorded)
 */
export async function runAttempt(o: AttemptOptions): Promise<AttemptResult> {
  const slot = await waitForSlot(o);
  try {
    return await runWithSlot(o);
  } finally {
    await slot?.release();
  }
}

/** The attempt's steps once it may open a report job on the server. */
async function runWithSlot(o: AttemptOptions): Promise<AttemptResult> {
  // The steps see one signal: the caller's, joined with the attempt's maxRunMs.
  const deadline = startRunDeadline(deadlinesOf(o.job).maxRunMs, o.signal);
  try {
    return await runSteps(await recordAttempt(o, deadline.signal));
  } finally {
    deadline.clear();
  }
}

/** The steps after the attempt's record. */
async function runSteps(attempt: Attempt): Promise<AttemptResult> {
  let lease: ReportClientLease | undefined;
  try {
    const check = await checkMayRun(attempt);
    if (check.kind === 'already-loaded') return await finishAlreadyLoaded(attempt);
    lease = await openReportClient(attempt);
    await clearDeadAttempts(attempt, lease.client, check.dead);
    const started = await startReportJob(attempt, lease.client, check.request);
    try {
      const finished = await waitForReportJob(attempt, lease.client, started);
      return await loadAndCommit(attempt, lease.client, finished, check.declaredTypes);
    } finally {
      await deleteReportJob(attempt, lease.client);
    }
  } catch (err) {
    throw await recordFailedAttempt(attempt, err);
  } finally {
    await lease?.release();
  }
}
