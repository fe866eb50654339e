/**
 * runAttempt(): one attempt of a run, from its record in the run history to the committed rows and the deleted
 * report job (docs/architecture.md "Flow of one run"). The steps are in attempt-steps.ts; this file only puts them in
 * order, each run by trace.step, which times it (docs/observability.md "Tracing") and sets the stage a failure is
 * recorded at (attempt-trace.ts). Knows nothing of BullMQ; cancellable by AbortSignal (docs/architecture.md
 * "Lifecycle").
 */
import { ATTR } from '../tracing.ts';
import type { Attempt, AttemptOptions, AttemptResult } from './attempt.ts';
import type { AttemptTrace } from './attempt-trace.ts';
import {
  checkMayRun,
  clearDeadAttempts,
  deleteReportJob,
  finishAlreadyLoaded,
  keepPagesOfFailedLoad,
  loadInTransaction,
  loadedResult,
  openReportClient,
  openKeptReport,
  openReport,
  recordAttempt,
  recordFailedAttempt,
  recordTimeline,
  startReportJob,
  traceAttempt,
  waitForReportJob,
  waitForSlot,
  type ReportClientLease,
  type ReportToLoad,
  type StartedReportJob,
  type ToLoad,
} from './attempt-steps.ts';
import { deadlinesOf, startRunDeadline } from './deadlines.ts';
import type { KeptPages } from './kept-pages.ts';

export {
  AttemptFailedError,
  defaultWorkerName,
  type AttemptOptions,
  type AttemptResult,
  type ExclusiveLock,
} from './attempt.ts';

/**
 * Runs one attempt of a run of `o.job`: wait for a report slot → record it → check it may run → start the report
 * job → wait for it → load → commit → delete the report job, in every outcome once started. From its start the
 * attempt has the job's maxRunMs to commit, each page its pageTimeoutMs (docs/architecture.md "Limits").
 * @returns figures of the committed load (status `already-loaded` when the run's rows were appended already)
 * @throws AttemptFailedError (already recorded as failed or interrupted; the target is untouched and the report
 *   job deleted): `.error` is the typed cause (RUN_TIMEOUT, PAGE_TIMEOUT for the deadlines, OVERLAP_LOCK_LOST once
 *   `o.exclusive` was found lost), `.retryable` says whether another attempt may help
 * @throws the database's error when the attempt could not even be recorded; AbortedError when aborted while it
 *   waited for a slot (nothing recorded)
 */
export async function runAttempt(o: AttemptOptions): Promise<AttemptResult> {
  const trace = traceAttempt(o);
  // The attempt's log lines carry its trace id, from its slot wait on (docs/observability.md "Tracing").
  const opts = trace.traceId ? { ...o, logger: o.logger.child({ traceId: trace.traceId }) } : o;
  try {
    // Kept pages ask nothing of the server: no report slot to wait for.
    const slot = opts.request?.pagesOf === undefined ? await trace.step('slot', () => waitForSlot(opts)) : undefined;
    try {
      const result = await runWithSlot(opts, trace);
      trace.end({
        [ATTR.status]: result.status,
        [ATTR.rows]: result.rows,
        [ATTR.pages]: result.pages,
        [ATTR.bytes]: result.bytes,
        [ATTR.loadPlan]: result.plan,
        ...(result.format ? { [ATTR.copyFormat]: result.format } : {}),
      });
      return result;
    } finally {
      await slot?.release();
    }
  } catch (err) {
    trace.fail(err, failureAttributes(err));
    throw err;
  }
}

/** The attempt's steps once it may open a report job on the server. */
async function runWithSlot(o: AttemptOptions, trace: AttemptTrace): Promise<AttemptResult> {
  // The steps see one signal: the caller's, joined with the attempt's maxRunMs and its lost overlap lock, which aborts
  // it as a shutdown would, with its own reason (recordFailedAttempt). The slot wait and the record see the caller's
  // alone: a lock lost before the attempt was recorded fails it, recorded, at its first step, not as nothing at all.
  const deadline = startRunDeadline(deadlinesOf(o.job).maxRunMs, o.signal, o.exclusive?.lost);
  try {
    return await runSteps(await trace.step('record', () => recordAttempt(o, deadline, trace)));
  } finally {
    deadline.clear();
  }
}

/** The steps after the attempt's record, each timed and setting the stage (attempt-trace.ts). */
async function runSteps(a: Attempt): Promise<AttemptResult> {
  const { trace } = a;
  const pagesOf = a.options.request?.pagesOf;
  let lease: ReportClientLease | undefined;
  let started: StartedReportJob | undefined;
  let report: ReportToLoad | undefined;
  try {
    const check = await trace.step('check', () => checkMayRun(a));
    let result: AttemptResult;
    if (check.kind === 'already-loaded') result = await finishAlreadyLoaded(a);
    else if (pagesOf !== undefined) result = await loadKeptReport(a, pagesOf, check);
    else {
      lease = await trace.step('token', () => openReportClient(a));
      const client = lease.client;
      if (check.dead.length > 0) await trace.step('clear', () => clearDeadAttempts(a, client, check.dead));
      const job = (started = await trace.step('start', () => startReportJob(a, client, check.request)));
      try {
        const finished = await trace.step(
          'render',
          () => waitForReportJob(a, client, job),
          (f) => ({ polls: f.polls, serverMs: serverRenderMs(f.job) }),
        );
        const opened = (report = openReport(a, client, job, finished));
        result = await loadedResult(a, opened, await trace.step('load', () => loadInTransaction(a, opened, check)));
      } catch (err) {
        if (report && !report.archive?.completed) await keepPagesOfFailedLoad(a, client, report);
        throw err;
      } finally {
        await report?.rows.close();
        await report?.progress?.close();
        await report?.archive?.close();
        await trace.step('delete', () => deleteReportJob(a, job, client));
      }
    }
    await recordTimeline(a);
    return result;
  } catch (err) {
    throw await recordFailedAttempt(a, err, { started, rows: report?.rows });
  } finally {
    await lease?.release();
  }
}

/**
 * `replay --from-pages`: the kept pages of attempt `pagesOf` loaded in the load transaction as the server's pages
 * would be, with no request to the server (docs/operations.md "Kept pages"). A load that failed on a page whose bytes
 * are damaged fails with that page's PAGES_NOT_KEPT instead of what its decoder made of them.
 */
async function loadKeptReport(a: Attempt, pagesOf: string, check: ToLoad): Promise<AttemptResult> {
  let report: (ReportToLoad & { kept: KeptPages }) | undefined;
  try {
    const { opened, loaded } = await a.trace.step('load', async () => {
      const opened = (report = await openKeptReport(a, pagesOf));
      return { opened, loaded: await loadInTransaction(a, opened, check) };
    });
    return await loadedResult(a, opened, loaded);
  } catch (err) {
    // A decoder stops on damaged bytes before their sha256 is checked: the damage is what failed the load.
    const kept = (err as { code?: unknown }).code === 'PAGES_NOT_KEPT' ? undefined : report?.kept;
    const damage = kept && !a.options.signal?.aborted ? await kept.damaged() : undefined;
    throw damage ?? err;
  } finally {
    await report?.rows.close();
    await report?.progress?.close();
    await report?.kept.close();
  }
}

/** The server's own rendering time from its job's startedAt and finishedAt, in ms, when it gave both. */
function serverRenderMs(job: { startedAt?: string | undefined; finishedAt?: string | undefined }): number | undefined {
  const ms = Date.parse(job.finishedAt ?? '') - Date.parse(job.startedAt ?? '');
  return Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

/** A failed attempt's span attributes: its stage and whether a retry may help. */
function failureAttributes(err: unknown): Record<string, string | boolean> {
  const e = err as { stage?: unknown; retryable?: unknown; code?: unknown; error?: { stage?: unknown } };
  const stage = e.stage ?? e.error?.stage;
  return {
    ...(typeof stage === 'string' ? { [ATTR.stage]: stage } : {}),
    ...(typeof e.retryable === 'boolean' ? { [ATTR.retryable]: e.retryable } : {}),
  };
}
