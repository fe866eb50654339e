/**
 * The steps of one attempt, in the order runAttempt (run-attempt.ts) takes them (docs/architecture.md "Flow of one
 * run"): record the attempt → check it may run → open the report client → clear dead attempts → start the report
 * job → wait for it → load → commit → delete the report job; or record the failure. Each returns what it produced;
 * the stage a failure is recorded at is the trace's (attempt-trace.ts), set as runAttempt runs each step.
 */
import { requestMandant } from '../config/mandants.ts';
import { randomUUID } from 'node:crypto';
import { AbortedError, coerceError, EtlError, isConnectionLoss } from '../errors.ts';
import { redactor } from '../failure-text.ts';
import { claimAppend, isAppended } from '../history/appends.ts';
import { commaCount, progressRecorder, readProgress, stoppedAtWords } from '../history/attempt-progress.ts';
import { setAttemptReportRequest, setAttemptRequestFromPages } from '../history/attempt-request.ts';
import {
  completeAttempt,
  failAttempt,
  failureOf,
  firstAttemptError,
  insertAttempt,
  recordAcceptedGuard,
  addToAcceptedGuard,
  runningAttempts,
  setAttemptPagesFrom,
  setAttemptReportJob,
  setReportJobDeleted,
  setAttemptTimeline,
  type RunningAttempt,
} from '../history/attempts.ts';
import { goneOwners } from '../history/orphans.ts';
import { getArchive } from '../history/page-archive.ts';
import { insertRunDocuments } from '../history/run-documents.ts';
import type { Logger } from '../logger.ts';
import { DocumentPageDecoder } from '../pages/decoder.ts';
import { SLOT_CLASS, slotOrder, type HeldSlot } from '../report-api/report-slots.ts';
import {
  encodeReportName,
  makeReportClient,
  type FinishedReport,
  type ReportClient,
  type ReportJob,
  type StartReportRequest,
} from '../report-api/index.ts';
import { untilDatabaseTakesIt } from '../db.ts';
import { outputShape, type RunTrigger } from '../vocabulary.ts';
import { loadRows, type LoadResult } from '../warehouse/copy-load.ts';
import { databaseError, PageCountMismatchError } from '../warehouse/load-errors.ts';
import {
  StatementCancelledError,
  withLoadTransaction,
  type LoadTransaction,
  type LoadTransactionOptions,
} from '../warehouse/load-transaction.ts';
import { parseTableName } from '../warehouse/identifiers.ts';
import { resolveDeclaredTypes, targetExists } from '../warehouse/target-table.ts';
import { countTargetRows, guardTrip, GuardTrippedError, needsRowCount, noTargetWords } from '../warehouse/guard.ts';
import { countRangeRows, describeRange, type ReplaceRange } from '../warehouse/replace-range.ts';
import { ATTR, extractTrace, type Attributes } from '../tracing.ts';
import {
  AttemptFailedError,
  defaultWorkerName,
  OverlapLockLost,
  OverlapLockLostError,
  type Attempt,
  type AttemptOptions,
  type AttemptResult,
} from './attempt.ts';
import { AttemptTrace } from './attempt-trace.ts';
import { connectionAuthStore } from './auth-store.ts';
import { deadlinesOf, RunDeadlineReached, RunTimeoutError, type RunDeadline } from './deadlines.ts';
import { jobDecoder } from './job-decoder.ts';
import { attemptInterval, logicalTimeOf, runParameters, runRange } from './logical-time.ts';
import { openKeptPages, type KeptPages } from './kept-pages.ts';
import { keepAllPages, makePageArchive, type PageArchive } from './page-archive.ts';
import { progressTimings, type ProgressTimings } from './progress-timings.ts';
import { reportRows, type ReportRows } from './report-rows.ts';

/** Fairness class of a run: scheduled ticks first, then runs asked for by hand, then backfills and replays. */
function slotClass(trigger: RunTrigger | undefined): (typeof SLOT_CLASS)[keyof typeof SLOT_CLASS] {
  if (trigger === 'schedule' || trigger === 'catchup') return SLOT_CLASS.scheduled;
  if (trigger === 'backfill' || trigger === 'replay') return SLOT_CLASS.backfill;
  return SLOT_CLASS.manual;
}

/**
 * Begins the trace of an attempt of `o.job`: its span is a child of `o.traceParent` (a queued run's), else of the
 * active context, with what is known before the attempt is recorded.
 */
export function traceAttempt(o: AttemptOptions): AttemptTrace {
  const { name, connectionName, job } = o.job;
  const attributes: Attributes = {
    [ATTR.job]: name,
    [ATTR.trigger]: o.request?.trigger ?? 'manual',
    [ATTR.outputType]: job.report.outputType,
    [ATTR.report]: job.report.name,
    [ATTR.connection]: connectionName,
    [ATTR.targetTable]: job.target.table,
    [ATTR.writeMode]: job.target.mode,
  };
  if (o.request?.runKey) attributes[ATTR.runKey] = o.request.runKey;
  return new AttemptTrace(o.traceParent ?? extractTrace(undefined), attributes);
}

/**
 * Step 0, with the fleet's report slots: waits for a slot on the job's connection, in line by fairness class and
 * logical time, before anything is recorded and without holding a PostgreSQL connection. Logs once that it waits
 * ("waiting for a slot on erp: 4 of 4 busy").
 * @returns the held slot (release it after the report job's DELETE), or undefined without slots
 * @throws AbortedError when the signal aborts while waiting; Redis errors
 */
export async function waitForSlot(o: AttemptOptions): Promise<HeldSlot | undefined> {
  if (!o.slots) return undefined;
  const { name, connectionName, connection } = o.job;
  const request = o.request ?? {};
  const logicalTime = Date.parse(request.scheduledFor ?? request.logicalEnd ?? '') || Date.now();
  let told = false;
  const waitStarted = performance.now();
  const slot = await o.slots.acquire(connectionName, connection.maxConcurrentReports, {
    order: slotOrder(slotClass(request.trigger), logicalTime),
    label: name,
    signal: o.signal,
    onWait: (u) => {
      if (told) return;
      told = true;
      o.logger.info(
        { job: name, connection: connectionName, held: u.held, waiting: u.waiting, limit: u.limit },
        `waiting for a slot on ${connectionName}: ${u.held} of ${u.limit} busy`,
      );
    },
  });
  if (told)
    o.logger.info(
      { job: name, connection: connectionName, waitedMs: Math.round(performance.now() - waitStarted) },
      `got a slot on ${connectionName}`,
    );
  return slot;
}

/**
 * Step 1: records the attempt `running`, numbered one more than its run's attempts so far, with its trace id.
 * @param deadline the attempt's maxRunMs (deadlines.ts), whose signal the next steps take; recording waits on the
 *   caller's alone
 * @throws the database's error (nothing was recorded: there is no attempt to fail)
 */
export async function recordAttempt(
  o: AttemptOptions,
  deadline?: RunDeadline,
  trace: AttemptTrace = traceAttempt(o),
): Promise<Attempt> {
  const { name, job } = o.job;
  const request = o.request ?? {};
  const attemptId = randomUUID();
  const runKey = request.runKey ?? attemptId;
  const target = parseTableName(job.target.table);
  const targetTable = `${target.schema}.${target.table}`;
  const startedMs = performance.now();
  const trigger = request.trigger ?? 'manual';
  const logicalTime = logicalTimeOf(o.job, request, new Date());
  // A full or restarting PostgreSQL takes the record once it has room (no attempt exists before it does).
  const start = {
    attemptId,
    job: name,
    runKey,
    scheduledFor: request.scheduledFor ? new Date(request.scheduledFor) : undefined,
    trigger,
    targetTable,
    writeMode: job.target.mode,
    worker: o.worker ?? defaultWorkerName(),
    ownerLock: o.owner?.key,
    // Kept with the run when this attempt makes it (a foreground run's), so that a replay asks for the same period.
    logicalStart: logicalTime.logicalStart,
    logicalEnd: logicalTime.logicalEnd,
    parameters: request.parameters,
    traceId: trace.traceId,
    // A bound of its period that does not render fails the attempt in checkMayRun, with the attempt recorded.
    interval: attemptInterval(o.job, logicalTime),
  };
  const waits = { todo: 'the attempt starts', done: 'the attempt is recorded' };
  const number = await untilDatabaseTakesIt(o.logger.child({ job: name }), waits, o.signal, () =>
    insertAttempt(o.pool, start),
  );
  // o.logger carries the trace id already (runAttempt's).
  const log = o.logger.child({ job: name, attemptId });
  log.info(
    { trigger, attempt: number, runKey, report: job.report.name, outputType: job.report.outputType },
    'run started',
  );
  trace.setAttributes({ [ATTR.attemptId]: attemptId, [ATTR.attempt]: number, [ATTR.runKey]: runKey });
  return {
    options: deadline ? { ...o, signal: deadline.signal } : o,
    deadline: deadline?.endsAt,
    attemptId,
    runKey,
    number,
    target,
    targetTable,
    startedAt: new Date(),
    startedMs,
    log,
    logicalTime,
    trace,
  };
}

/** What a load needs of {@link checkMayRun}'s findings. */
export interface ToLoad {
  /** Declared column types, resolved by PostgreSQL (normalised column → type). */
  readonly declaredTypes: ReadonlyMap<string, string>;
  /** The period whose rows the run replaces (target.replaceRange rendered for its logical time), if any. */
  readonly range?: ReplaceRange | undefined;
}

/** What {@link checkMayRun} found. */
export type MayRun =
  | { readonly kind: 'already-loaded' }
  | (ToLoad & {
      readonly kind: 'run';
      /** Attempts of this run `running` whose owner is gone: to clear before starting (with the overlap lock). */
      readonly dead: readonly RunningAttempt[];
      /** The start request: the job's report with its parameters rendered for the run's logical time. */
      readonly request: StartReportRequest;
    });

/**
 * Step 2: checks that the attempt may run, before anything is asked of the server: an append whose run is already
 * appended has nothing to do; another attempt of the run that is alive makes this one wait; the report name,
 * declared types and parameters must be valid (docs/report-export-service.md "Report naming rules").
 * @throws EtlError RUN_IN_PROGRESS (retryable) when another attempt of the run is alive; REPORT_NAME_INVALID,
 *   CONFIG_INVALID (not retryable) for a bad name, type or parameter
 */
export async function checkMayRun(a: Attempt): Promise<MayRun> {
  const o = a.options;
  const { name, job, connection } = o.job;
  if (job.target.mode === 'append' && (await isAppended(o.pool, name, a.runKey))) return { kind: 'already-loaded' };
  const others = await otherAttemptsNotAlive(a);
  const declaredTypes = await resolveDeclaredTypes(o.pool, name, job.target.columns);
  const { logicalStart, logicalEnd } = a.logicalTime;
  const parameters = runParameters(
    o.job,
    { ...o.request, logicalStart: logicalStart.toISOString(), logicalEnd: logicalEnd.toISOString() },
    new Date(),
  );
  // Recorded before the name is checked: a refused name shows what was asked for. An attempt loading kept pages
  // sends nothing: it records the request those pages came from, never this fresh rendering.
  const redact = redactor([connection.clientSecret]);
  const pagesOf = o.request?.pagesOf;
  if (pagesOf !== undefined) await setAttemptRequestFromPages(o.pool, a.attemptId, pagesOf);
  else
    await setAttemptReportRequest(o.pool, a.attemptId, {
      mandant: requestMandant(name, job),
      name: job.report.name,
      outputType: job.report.outputType,
      paging: job.report.paging,
      parameters: Object.fromEntries(Object.entries(parameters).map(([k, v]) => [k, redact(v)])),
    });
  encodeReportName(job.report.name, connection.pathEncoding, { job: name });
  return {
    kind: 'run',
    dead: o.exclusive ? others : [],
    request: { ...job.report, mandant: requestMandant(name, job), job: name, parameters },
    declaredTypes,
    range: runRange(o.job, a.logicalTime),
  };
}

/** Ends an attempt whose run an earlier attempt appended: recorded succeeded with nothing added. */
export async function finishAlreadyLoaded(a: Attempt): Promise<AttemptResult> {
  await recordNothingAdded(a, a.log, { pages: 0, bytes: 0 });
  a.log.info({ runKey: a.runKey }, 'rows of this run were already appended by an earlier attempt: nothing to do');
  return resultOf(a, { status: 'already-loaded', plan: 'none', rows: 0, pages: 0, bytes: 0 });
}

/** Records the attempt succeeded with no rows (outside any transaction, waiting until PostgreSQL takes it). */
async function recordNothingAdded(a: Attempt, log: Logger, figures: { pages: number; bytes: number }): Promise<void> {
  const waits = { todo: 'recording the attempt', done: 'the attempt is recorded' };
  await untilDatabaseTakesIt(log, waits, undefined, () =>
    completeAttempt(a.options.pool, a.attemptId, { rows: 0, ...figures }),
  );
}

/** A report client for one attempt, and how to give it back. */
export interface ReportClientLease {
  readonly client: ReportClient;
  /** Gives a shared client back, or closes the attempt's own; never throws. */
  release(): Promise<void>;
}

/**
 * Step 3: the report client of the job's connection: a lease on the caller's shared one (a worker's), else one of
 * the attempt's own, which reads the discovery document and so fails here when the server cannot be reached.
 * @throws ServerUnreachableError, TokenError, AbortedError, ConfigError (a user-dependent connection without its key)
 */
export async function openReportClient(a: Attempt): Promise<ReportClientLease> {
  const o = a.options;
  const { connectionName, connection } = o.job;
  if (o.clients) {
    const lease = await o.clients.acquire(connectionName, connection);
    return { client: lease.client, release: async () => lease.release() };
  }
  const authStore = connectionAuthStore(o.pool, connectionName, connection);
  const client = await makeReportClient({
    connection,
    connectionName,
    redis: o.redis,
    logger: o.logger,
    authStore,
    signal: o.signal,
    ...(o.prefix ? { keyPrefix: `${o.prefix}:` } : {}),
  });
  return { client, release: () => client.close().catch(() => undefined) };
}

/**
 * Step 4 (only with the overlap lock): deletes the report jobs that dead attempts of this run left on the server
 * and records those attempts `interrupted` (docs/architecture.md "Liveness").
 * @throws the server's or the database's error (this attempt then fails, retryably where they are)
 */
export async function clearDeadAttempts(
  a: Attempt,
  client: ReportClient,
  dead: readonly RunningAttempt[],
): Promise<void> {
  for (const d of dead) {
    let deleted = 'no report job was started';
    if (d.report_job_id) {
      await client.deleteJob(d.report_job_id);
      await setReportJobDeleted(a.options.pool, d.attempt_id);
      deleted = `its report job ${d.report_job_id} was deleted`;
    }
    const progress = readProgress(d.progress);
    const stopped = progress ? `; it ${stoppedAtWords(progress, commaCount)}, nothing committed` : '';
    const message =
      `attempt ${d.attempt} was abandoned by its worker (${d.worker ?? 'unknown'}: stopped or lost its ` +
      `lock)${stopped}; ${deleted} by attempt ${a.number}`;
    await failAttempt(a.options.pool, d.attempt_id, {
      status: 'interrupted',
      stage: 'load',
      errorKind: 'ABORTED',
      retryable: true,
      message,
      details: { reportJobId: d.report_job_id, ...(progress ? { progress } : {}) },
    });
    a.log.warn({ deadAttemptId: d.attempt_id, reportJobId: d.report_job_id }, 'cleaned up after a dead attempt');
  }
}

/** A started report job, when the server answered (the first poll counts from it), and the log naming it. */
export interface StartedReportJob {
  readonly job: ReportJob;
  readonly answeredAt: number;
  readonly log: Logger;
}

/**
 * Step 5: starts the report job (docs/report-export-service.md "Endpoints" #1) and records its id before anything
 * else, so that a process dying from here on leaves a report job someone can delete. Calls `onReportJobStarted`.
 * @throws what the start request throws (rights failure, 403, …; the client deletes a job it created then); the
 *   database's error recording the id, after the report job was deleted
 */
export async function startReportJob(
  a: Attempt,
  client: ReportClient,
  request: StartReportRequest,
): Promise<StartedReportJob> {
  const job = await client.startReport(request, a.options.signal);
  const started = { job, answeredAt: Date.now(), log: a.log.child({ reportJobId: job.id }) };
  a.trace.setAttributes({ [ATTR.reportJobId]: job.id });
  try {
    await setAttemptReportJob(a.options.pool, a.attemptId, job.id);
  } catch (err) {
    await deleteReportJob(a, started, client);
    throw err;
  }
  a.options.onReportJobStarted?.();
  return started;
}

/**
 * Step 6: polls the report job until rendered (docs/report-export-service.md "States and transitions"), recording
 * the polls as its progress (etl.attempts.progress, page 0), so that an attempt whose process dies while the server
 * renders says so and when it was last heard of (docs/operations.md "No orphans (the janitor)").
 * @returns the finished job with the rows and pages it announced
 * @throws ReportFailedError (FinishedError, the server's whole text), poll errors, AbortedError
 */
export async function waitForReportJob(
  a: Attempt,
  client: ReportClient,
  started: StartedReportJob,
): Promise<FinishedReport> {
  const progress = progressRecorder(a.options.pool, a.attemptId, a.log);
  const onPoll = (polls: number) => progress.note({ page: 0, pagesRead: 0, pages: null, rows: 0, polls });
  try {
    const finished = await client.waitForJob(started.job.id, a.options.signal, started.answeredAt, onPoll);
    started.log.info({ rows: finished.rows, pages: finished.pages }, 'report job finished');
    return finished;
  } finally {
    // Written before the load's own progress replaces it.
    await progress.close();
  }
}

/** The announced rows=, where pages hold report rows (not lines or documents). */
function announcedRows(a: Attempt, finished: FinishedReport): number | undefined {
  const { job } = a.options.job;
  return outputShape(job.report.outputType, job.target) === 'rows' ? finished.rows : undefined;
}

/** A rendered report job and its pages as rows (close them, and the archive, once the load ended). */
export interface ReportToLoad {
  readonly started: StartedReportJob;
  readonly finished: FinishedReport;
  readonly rows: ReportRows;
  /**
   * Keeps the pages as they are read, with `target.archive` (docs/operations.md "Kept pages"); documents' pages only
   * when their load fails.
   */
  readonly archive?: PageArchive | undefined;
  /** Records how far the reading got (etl.attempts.progress); close it once the load ended. */
  readonly progress?: ProgressTimings | undefined;
}

/**
 * The pages as rows, nothing requested yet, within pageTimeoutMs, pages= and rows= (architecture.md "Limits"); kept
 * as they are read when the job keeps its pages (`target.archive`, else its connection's or the defaults').
 */
export function openReport(
  a: Attempt,
  client: ReportClient,
  started: StartedReportJob,
  finished: FinishedReport,
): ReportToLoad {
  const o = a.options;
  const { job, archive: keep } = o.job;
  const limits = {
    pageTimeoutMs: deadlinesOf(o.job).pageTimeoutMs,
    announced: { pages: finished.pages, rows: announcedRows(a, finished) },
  };
  const decoder = () => jobDecoder(o.job, a.startedAt);
  const archive =
    keep &&
    makePageArchive({
      pool: o.pool,
      attemptId: a.attemptId,
      outputType: job.report.outputType,
      keepDays: keep.keepDays,
      announced: { pages: finished.pages, rows: finished.rows },
      logger: a.log,
      signal: o.signal,
    });
  // Documents (pdf, excel, word) a load commits are kept by their target and count as kept pages: not stored twice
  // as they are read; a load that fails keeps their pages from the server (keepPagesOfFailedLoad).
  const kept = outputShape(job.report.outputType, job.target) === 'file' ? undefined : archive;
  const progress = attemptProgress(a, finished);
  const rows = reportRows(client, finished.jobId, decoder, started.log, o.signal, limits, progress, kept);
  return { started, finished, rows, archive, progress };
}

/** The attempt's page timings, recording how far its reading got (etl.attempts.progress) against `finished.pages`. */
function attemptProgress(a: Attempt, finished: FinishedReport): ProgressTimings {
  return progressTimings(a.trace.pages, progressRecorder(a.options.pool, a.attemptId, a.log), finished.pages ?? null);
}

/**
 * Instead of steps 3 to 6, for `replay --from-pages`: the kept pages of attempt `pagesOf` of the same run as the
 * report to load, read from PostgreSQL with no request to the server, checked against what the server announced then.
 * Records on the attempt where its rows come from, and how far the reading got (etl.attempts.progress) as
 * {@link openReport} does.
 * @returns the report, and the kept pages and its progress to close once the load ended
 * @throws EtlError PAGES_NOT_KEPT (not retryable) when that attempt kept no complete pages (none, pruned, another run's
 *   or output type); the database's errors
 */
export async function openKeptReport(a: Attempt, pagesOf: string): Promise<ReportToLoad & { kept: KeptPages }> {
  const o = a.options;
  const { name, job } = o.job;
  const archive = await getArchive(o.pool, pagesOf);
  const notKept = (why: string) =>
    new EtlError('PAGES_NOT_KEPT', `attempt ${pagesOf} ${why}: replay the run from the server instead`, {
      retryable: false,
    });
  if (!archive) throw notKept('kept no pages, or they were deleted after target.archive.keepDays');
  if (archive.job !== name || archive.runKey !== a.runKey)
    throw notKept(`is of run ${archive.runKey} of job ${archive.job}, not of this run`);
  if (archive.outputType !== job.report.outputType)
    throw notKept(`kept ${archive.outputType} pages, and the job's output type is now ${job.report.outputType}`);
  const kept = await openKeptPages(o.pool, archive);
  try {
    await setAttemptPagesFrom(o.pool, a.attemptId, pagesOf);
  } catch (err) {
    await kept.close();
    throw err;
  }
  const id = `kept pages of attempt ${pagesOf}`;
  const finished: FinishedReport = {
    jobId: id,
    rows: archive.announcedRows ?? 0,
    pages: archive.announcedPages,
    job: { id, state: 'FinishedSuccess', message: '' },
  };
  const started: StartedReportJob = { job: finished.job, answeredAt: Date.now(), log: a.log.child({ pagesOf }) };
  started.log.info(
    { pages: kept.pages.length, keptAttempt: archive.attempt },
    `loading the pages attempt ${archive.attempt} of this run kept, without the server`,
  );
  const limits = { announced: { pages: finished.pages, rows: announcedRows(a, finished) } };
  const decoder = () => jobDecoder(o.job, a.startedAt);
  // Progress as a server load records it, so that a replay killed mid-load says where it stopped.
  const progress = attemptProgress(a, finished);
  const rows = reportRows(kept, id, decoder, started.log, o.signal, limits, progress);
  return { started, finished, rows, kept, progress };
}

/**
 * After a load that failed before it read every page (or a documents load, which keeps no pages as it reads them),
 * with `target.archive`: keeps the pages from the server all the same (docs/operations.md "Kept pages": a failed load
 * keeps its pages), before the report job is deleted, each page within pageTimeoutMs as the load's. Not once the
 * attempt's signal aborted (a shutdown, maxRunMs, a lost overlap lock). A failure to keep them is logged, not thrown:
 * the load's failure stands.
 */
export async function keepPagesOfFailedLoad(a: Attempt, client: ReportClient, report: ReportToLoad): Promise<void> {
  const { archive, finished, started } = report;
  const signal = a.options.signal;
  if (!archive || signal?.aborted) return;
  try {
    const pages = await keepAllPages(
      archive,
      (page, pageSignal) => client.openPage(finished.jobId, page, pageSignal),
      finished.pages,
      signal,
      deadlinesOf(a.options.job).pageTimeoutMs,
    );
    started.log.info({ pages }, 'the load failed: its pages are kept all the same (replay --from-pages)');
  } catch (err) {
    started.log.warn({ err: coerceError(err).message }, 'the load failed, and so did keeping its pages');
  }
}

/** The attempt's load transaction: its target, zone, signal and deadline. */
export function loadTransactionOf(a: Attempt): LoadTransactionOptions {
  const { target, deadline, options } = a;
  return { target, timezone: options.job.connection.timezone, signal: options.signal, deadline };
}

/**
 * Step 7, in the load transaction: every page into the target, within its guard (typed rows checked before a page is
 * read) and the announced pages; a documents report's documents are recorded.
 * @throws fetch, parse and load errors naming page and row; PAGE_TIMEOUT; PAGE_COUNT_MISMATCH, ROW_COUNT_MISMATCH;
 *   GuardTrippedError
 */
export async function loadReport(
  a: Attempt,
  tx: LoadTransaction['tx'],
  { started, finished, rows }: ReportToLoad,
  { declaredTypes, range }: ToLoad,
): Promise<LoadResult & { noTarget?: string }> {
  const { name, job, connection } = a.options.job;
  const expectedRows = announcedRows(a, finished);
  const guard = await targetGuard(a, tx, started.log, range);
  if (expectedRows !== undefined) await guard(expectedRows);
  let loaded: LoadResult & { noTarget?: string } = await loadRows(
    tx,
    {
      job: name,
      target: a.target,
      mode: job.target.mode,
      key: job.target.key,
      range,
      declaredTypes,
      schemaChanges: job.target.schemaChanges,
      expectedRows,
      timezone: connection.timezone,
      logger: started.log,
      runKey: a.runKey,
      mandant: a.options.job.mandant,
      timed: (step, fn) => a.trace.step(step, fn),
    },
    rows,
  );
  if (loaded.plan === 'empty' && loaded.columns.length === 0) {
    // Said where the run's outcome is read: the attempt's record (its page) and the result (`run`'s summary).
    const words = noTargetWords(a.targetTable);
    await addToAcceptedGuard(tx, a.attemptId, words);
    loaded = { ...loaded, noTarget: words };
  }
  if (expectedRows === undefined) {
    await guard(loaded.rows);
    // Lines and documents are not report rows: the page count checks them.
    if (rows.pages !== finished.pages) throw new PageCountMismatchError(finished.pages, rows.pages);
  }
  if (rows.decoder instanceof DocumentPageDecoder)
    await insertRunDocuments(tx, a.attemptId, a.targetTable, rows.decoder.documents);
  return loaded;
}

/** Steps 7 and 8 in one load transaction: the rows and the attempt's records commit together or not at all. */
export function loadInTransaction(
  a: Attempt,
  report: ReportToLoad,
  check: ToLoad,
): Promise<LoadResult & { committed: boolean; noTarget?: string }> {
  return withLoadTransaction(a.options.pool, loadTransactionOf(a), async (lt) => {
    const loaded = await loadReport(a, lt.tx, report, check);
    return { ...loaded, committed: await a.trace.step('commit', () => commitLoad(a, lt, loaded, report.rows)) };
  });
}

/**
 * Step 8: the attempt's records in the load transaction, then COMMIT, so that rows and history commit together: an
 * append claims its run key (claimed already: rolled back), the overlap lock is confirmed, the attempt `succeeded`.
 * @returns whether it committed
 * @throws OverlapLockLostError (OVERLAP_LOCK_LOST); ABORTED when a later attempt declared this one dead; the signal's
 *   reason
 */
export async function commitLoad(
  a: Attempt,
  lt: LoadTransaction,
  loaded: LoadResult,
  rows: ReportRows,
): Promise<boolean> {
  const o = a.options;
  const { name, job } = o.job;
  const claimed =
    job.target.mode !== 'append' || (await claimAppend(lt.tx, name, a.runKey, a.attemptId, a.targetTable, loaded.rows));
  if (!claimed) {
    await lt.rollback();
    return false;
  }
  // Without the overlap lock another run of the job may be loading too: an older tick must not overwrite a newer one.
  // Its renewal may not have run since it was lost: a lock that cannot be confirmed now is taken for lost.
  if (o.exclusive && !(await o.exclusive.confirm())) throw new OverlapLockLostError('commit');
  if (!(await completeAttempt(lt.tx, a.attemptId, { rows: loaded.rows, pages: rows.pages, bytes: rows.bytes })))
    throw new EtlError(
      'ABORTED',
      'this attempt was declared dead by a later attempt of the same run (it stalled past its lock): ' +
        'its rows are not committed',
      { stage: 'commit', retryable: false },
    );
  await lt.commit();
  return true;
}

/** The result of a load: committed, or rolled back as another attempt appended the run first (then recorded). */
export async function loadedResult(
  a: Attempt,
  { started, rows }: ReportToLoad,
  loaded: LoadResult & { committed: boolean; noTarget?: string | undefined },
): Promise<AttemptResult> {
  const { pages, bytes } = rows;
  if (!loaded.committed) {
    await recordNothingAdded(a, started.log, { pages, bytes });
    started.log.warn(
      { runKey: a.runKey },
      'another attempt of this run committed its rows first: this attempt added nothing',
    );
  }
  const { plan, format } = loaded;
  const result = resultOf(a, {
    status: loaded.committed ? 'succeeded' : 'already-loaded',
    plan,
    format,
    rows: loaded.committed ? loaded.rows : 0,
    pages,
    bytes,
    reportJobId: started.job.id,
    ...(loaded.noTarget ? { noTarget: loaded.noTarget } : {}),
  });
  started.log.info(
    {
      plan,
      format,
      rows: loaded.rows,
      pages,
      bytes,
      durationMs: Math.round(result.durationMs),
      rowsPerSec: Math.round((loaded.rows / result.durationMs) * 1000),
    },
    'run succeeded',
  );
  return result;
}

/**
 * The target's guard (docs/loaded-tables.md "Guards and schema changes"), in the load transaction: counts the target's
 * rows now when maxShrinkPercent needs them (with a range: the rows in it, which the run replaces), and returns the
 * check of a row count. A trip fails the attempt, unless the run accepts it (`replay --accept-guard`): then it is
 * logged and recorded on the attempt in the same transaction.
 * @throws GuardTrippedError (from the check; not retryable)
 */
async function targetGuard(
  a: Attempt,
  tx: LoadTransaction['tx'],
  log: Logger,
  range: ReplaceRange | undefined,
): Promise<(rows: number) => Promise<void>> {
  const { mode, guard } = a.options.job.job.target;
  const mandant = a.options.job.mandant;
  const currentRows = !needsRowCount(mode, guard)
    ? undefined
    : range
      ? await countRangeRows(tx, a.target, range, mandant)
      : await countTargetRows(tx, a.target, mandant);
  const exists = currentRows !== undefined || (await targetExists(tx, a.target));
  const scope = [range && describeRange(range), mandant && `${mandant.column} ${mandant.value}`].filter(Boolean);
  const table = scope.length > 0 ? `${a.targetTable} (${scope.join(', ')})` : a.targetTable;
  return async (rows) => {
    const trip = guardTrip({ table, mode, guard, rows, currentRows, targetExists: exists, runKey: a.runKey });
    if (!trip) return;
    if (!a.options.request?.acceptGuard) throw new GuardTrippedError(trip);
    log.warn(
      { guard: trip.guard, ...trip.details },
      `loading past the target's guard, as asked (--accept-guard): ${trip.finding}`,
    );
    await recordAcceptedGuard(tx, a.attemptId, trip.finding);
  };
}

/**
 * Step 9, in every outcome once a report job was started: deletes it (docs/report-export-service.md "What the
 * service does") and records it deleted. A failing DELETE is logged with the job id, not thrown: the outcome stands,
 * and the janitor deletes the job later (docs/operations.md "No orphans (the janitor)").
 */
export async function deleteReportJob(
  a: Attempt,
  started: StartedReportJob | undefined,
  client: ReportClient,
): Promise<void> {
  if (!started) return;
  try {
    await client.deleteJob(started.job.id);
  } catch (err) {
    started.log.warn({ err: coerceError(err).message }, 'could not delete the report job: the janitor will');
    return;
  }
  await setReportJobDeleted(a.options.pool, a.attemptId).catch((err: unknown) =>
    started.log.warn({ err: coerceError(err).message }, 'report job deleted, but recording that failed'),
  );
}

/** After the report job's DELETE, stores a succeeded attempt's timeline; a failure to is logged, not thrown. */
export async function recordTimeline(a: Attempt): Promise<void> {
  await setAttemptTimeline(a.options.pool, a.attemptId, a.trace.timeline()).catch((err: unknown) => {
    a.log.warn({ err: coerceError(err).message }, "could not record the attempt's timeline");
  });
}

/**
 * Records a failed attempt (`failed`, or `interrupted` when aborted) at the trace's stage unless the error names one,
 * with its kind, the server's words and how far it got; until PostgreSQL takes it (docs/architecture.md "Liveness").
 * An abort's reason names the failure: RUN_TIMEOUT for maxRunMs, OVERLAP_LOCK_LOST (`failed`) for a lost overlap
 * lock, else ABORTED.
 * @param at the report job started and the rows read, if it got that far
 * @returns the error to throw: the typed cause, with the attempt's id
 */
export async function recordFailedAttempt(
  a: Attempt,
  raw: unknown,
  at: { started?: StartedReportJob | undefined; rows?: ReportRows | undefined } = {},
): Promise<AttemptFailedError> {
  const o = a.options;
  const { stage } = a.trace;
  const figures = { rows: 0, pages: at.rows?.pages ?? 0, bytes: at.rows?.bytes ?? 0 };
  let err = coerceError(raw);
  // Once the attempt's signal aborted, whatever broke on the way is its consequence: maxRunMs, a lost overlap lock,
  // or a shutdown.
  if (o.signal?.aborted && o.signal.reason instanceof RunDeadlineReached) {
    const cancelled = err instanceof StatementCancelledError ? err.cancelled : undefined;
    err = new RunTimeoutError(o.signal.reason.limitMs, { stage, ...figures, cancelled });
  } else if (o.signal?.aborted && o.signal.reason instanceof OverlapLockLost) err = new OverlapLockLostError();
  else if (o.signal?.aborted && !(err instanceof AbortedError)) err = new AbortedError(o.signal.reason);
  else if (!(err instanceof EtlError) && isConnectionLoss(err)) err = databaseError(err, stage);
  if (err instanceof EtlError && !err.stage) err.stage = stage;
  const failure = failureOf(err, stage, figures);
  failure.timeline = a.trace.timeline();
  const log = at.started?.log ?? a.log;
  const waits = { todo: 'recording the failed attempt', done: 'the failed attempt is recorded' };
  // Only while it runs: one closed by another process meanwhile keeps that process's words.
  const closedElsewhere = await untilDatabaseTakesIt(log, waits, undefined, async () => {
    if (await failAttempt(o.pool, a.attemptId, failure, { onlyRunning: true })) return undefined;
    const first = await firstAttemptError(o.pool, a.attemptId);
    // Its own record, written by an earlier try whose answer was lost, is not another process's.
    return first && first.message !== failure.message ? first.error_kind : undefined;
  }).catch((e: unknown) => {
    log.error({ err: coerceError(e).message }, 'could not record the failed run');
    return undefined;
  });
  const about = { code: failure.errorKind, stage: failure.stage, retryable: failure.retryable };
  if (closedElsewhere)
    log.warn(
      { ...about, closedAs: closedElsewhere },
      `run ${failure.status} here after another process had closed this attempt (${closedElsewhere}), which ` +
        `recorded it: ${err.message}`,
    );
  else log.error(about, `run ${failure.status}: ${err.message}`);
  return new AttemptFailedError(a.attemptId, err, closedElsewhere);
}

/**
 * The other attempts of this run still recorded `running`, none of them alive. An attempt whose owner session still
 * holds its lock is loading: starting a second report job would download everything only to find the run committed
 * (append) or to race it (replace, merge), so this attempt fails at once instead.
 * @throws EtlError RUN_IN_PROGRESS (retryable) when another attempt of the run is alive
 */
async function otherAttemptsNotAlive(a: Attempt): Promise<RunningAttempt[]> {
  const pool = a.options.pool;
  const running = await runningAttempts(pool, a.options.job.name, a.runKey);
  const others = running.filter((r) => r.attempt_id !== a.attemptId);
  const gone = await goneOwners(
    pool,
    others.flatMap((r) => (r.owner_lock ? [r.owner_lock] : [])),
  );
  const live = others.find((r) => r.owner_lock && !gone.has(r.owner_lock));
  if (live)
    throw new EtlError(
      'RUN_IN_PROGRESS',
      `attempt ${live.attempt} of this run (${live.worker ?? 'unknown worker'}) is still in progress: this attempt ` +
        `started nothing on the server and is retried later`,
      { stage: 'start', details: { runKey: a.runKey, otherAttemptId: live.attempt_id } },
    );
  return others;
}

function resultOf(
  a: Attempt,
  r: Omit<AttemptResult, 'attemptId' | 'job' | 'runKey' | 'attempt' | 'durationMs'>,
): AttemptResult {
  return {
    attemptId: a.attemptId,
    job: a.options.job.name,
    runKey: a.runKey,
    attempt: a.number,
    durationMs: performance.now() - a.startedMs,
    ...r,
  };
}
