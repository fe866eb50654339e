/**
 * The steps of one attempt, in the order runAttempt (run-attempt.ts) takes them (docs/architecture.md "Flow of one
 * run"): record the attempt → check it may run → open the report client → clear dead attempts → start the report
 * job → wait for it → load and commit → delete the report job; or record the failure. Each step names its stage
 * once, as it begins: a failure inside it is recorded with that stage unless the error names a more precise one.
 */
import { randomUUID } from 'node:crypto';
import { AbortedError, coerceError, EtlError, isConnectionLoss, throwIfAborted } from '../errors.ts';
import { claimAppend, isAppended } from '../history/appends.ts';
import {
  completeAttempt,
  failAttempt,
  failureOf,
  insertAttempt,
  recordAcceptedGuard,
  runningAttempts,
  setAttemptReportJob,
  setAttemptTimeline,
  type AttemptFailure,
  type RunningAttempt,
} from '../history/attempts.ts';
import { goneOwners } from '../history/orphans.ts';
import { insertRunDocuments } from '../history/run-documents.ts';
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
import { StatementCancelledError, untilDatabaseTakesIt, type Queryable } from '../db.ts';
import { outputShape, type RunTrigger } from '../vocabulary.ts';
import { useLoadingFlags } from '../runtime-flags.ts';
import { loadRows, withLoadTransaction, type LoadResult } from '../warehouse/copy-load.ts';
import { databaseError, PageCountMismatchError } from '../warehouse/load-errors.ts';
import { parseTableName } from '../warehouse/identifiers.ts';
import { resolveDeclaredTypes } from '../warehouse/target-table.ts';
import { countTargetRows, guardTrip, GuardTrippedError, needsRowCount } from '../warehouse/guard.ts';
import { ATTR, extractTrace, type Attributes } from '../tracing.ts';
import {
  AttemptFailedError,
  defaultWorkerName,
  type Attempt,
  type AttemptOptions,
  type AttemptResult,
} from './attempt.ts';
import { AttemptTrace, type StepTimer } from './attempt-trace.ts';
import { connectionAuthStore } from './auth-store.ts';
import { deadlinesOf, RunDeadlineReached, RunTimeoutError } from './deadlines.ts';
import { jobDecoder } from './job-decoder.ts';
import { logicalTimeOf, runParameters } from './logical-time.ts';
import { reportRows } from './report-rows.ts';

/** Fairness class of a run by its trigger: scheduled ticks first, then runs asked for by hand, then backfills and replays. */
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
 * Step 1: records the attempt `running` in the run history, numbered one more than its run's attempts so far, with
 * the trace id of its spans when they are exported (`trace`, begun by runAttempt before its slot wait).
 * @param signal what the next steps are cancelled by: the caller's signal joined with the attempt's maxRunMs
 *   (deadlines.ts); recording itself waits on the caller's alone
 * @returns the attempt's context for the next steps (stage `config`)
 * @throws the database's error (nothing was recorded: there is no attempt to fail)
 */
export async function recordAttempt(
  o: AttemptOptions,
  signal: AbortSignal | undefined = o.signal,
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
  const options = signal === o.signal ? o : { ...o, signal };
  return {
    options,
    attemptId,
    runKey,
    number,
    target,
    targetTable,
    startedAt: new Date(),
    startedMs,
    stage: 'config',
    log,
    reportJobId: undefined,
    pages: 0,
    bytes: 0,
    logicalTime,
    trace,
  };
}

/** What {@link checkMayRun} found. */
export type MayRun =
  | { readonly kind: 'already-loaded' }
  | {
      readonly kind: 'run';
      /** Attempts of this run recorded `running` whose owner is gone: to clear before starting (with the overlap lock). */
      readonly dead: readonly RunningAttempt[];
      /** The start request: the job's report with its parameters rendered for the run's logical time. */
      readonly request: StartReportRequest;
      /** Declared column types, resolved by PostgreSQL (normalised column → type). */
      readonly declaredTypes: ReadonlyMap<string, string>;
    };

/**
 * Step 2: checks that the attempt may run, before anything is asked of the server: an append whose run is already
 * appended has nothing to do; another attempt of the run that is alive makes this one wait; the report name,
 * declared types and parameters must be valid (docs/report-export-service.md "Report naming rules").
 * @throws EtlError RUN_IN_PROGRESS (retryable) when another attempt of the run is alive; REPORT_NAME_INVALID,
 *   CONFIG_INVALID (not retryable) for a bad name, type or parameter
 */
export async function checkMayRun(a: Attempt): Promise<MayRun> {
  a.stage = 'config';
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
  encodeReportName(job.report.name, connection.pathEncoding, { job: name });
  return {
    kind: 'run',
    dead: o.exclusive ? others : [],
    request: { ...job.report, job: name, parameters },
    declaredTypes,
  };
}

/**
 * Ends an attempt whose run was already appended by an earlier attempt: recorded succeeded with nothing added.
 * @returns the result, status `already-loaded`
 */
export async function finishAlreadyLoaded(a: Attempt): Promise<AttemptResult> {
  const waits = { todo: 'recording the attempt', done: 'the attempt is recorded' };
  await untilDatabaseTakesIt(a.log, waits, undefined, () =>
    completeAttempt(a.options.pool, a.attemptId, { rows: 0, pages: 0, bytes: 0 }),
  );
  a.log.info({ runKey: a.runKey }, 'rows of this run were already appended by an earlier attempt: nothing to do');
  return resultOf(a, { status: 'already-loaded', plan: 'none', rows: 0 });
}

/** A report client for one attempt, and how to give it back. */
export interface ReportClientLease {
  readonly client: ReportClient;
  /** Gives a shared client back, or closes the attempt's own; never throws. */
  release(): Promise<void>;
}

/**
 * Step 3: the report client of the job's connection (stage `token`): a lease on the caller's shared one (a
 * worker's), else one of the attempt's own, which reads the discovery document and so fails here when the server
 * cannot be reached.
 * @throws ServerUnreachableError, TokenError, AbortedError, ConfigError (a user-dependent connection without its key)
 */
export async function openReportClient(a: Attempt): Promise<ReportClientLease> {
  a.stage = 'token';
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
  a.stage = 'start';
  for (const d of dead) {
    let deleted = 'no report job was started';
    if (d.report_job_id) {
      await client.deleteJob(d.report_job_id);
      deleted = `its report job ${d.report_job_id} was deleted`;
    }
    const message = `attempt ${d.attempt} was abandoned by its worker (${d.worker ?? 'unknown'}: stopped or lost its lock); ${deleted} by attempt ${a.number}`;
    await failAttempt(a.options.pool, d.attempt_id, {
      status: 'interrupted',
      stage: 'load',
      errorKind: 'ABORTED',
      retryable: true,
      message,
      details: { reportJobId: d.report_job_id },
    });
    a.log.warn({ deadAttemptId: d.attempt_id, reportJobId: d.report_job_id }, 'cleaned up after a dead attempt');
  }
}

/** A started report job and when the server answered the start request (epoch ms; the first poll counts from it). */
export interface StartedReportJob {
  readonly job: ReportJob;
  readonly answeredAt: number;
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
  a.stage = 'start';
  const job = await client.startReport(request, a.options.signal);
  const answeredAt = Date.now();
  a.reportJobId = job.id;
  a.log = a.log.child({ reportJobId: job.id });
  a.trace.setAttributes({ [ATTR.reportJobId]: job.id });
  try {
    await setAttemptReportJob(a.options.pool, a.attemptId, job.id);
  } catch (err) {
    await deleteReportJob(a, client);
    throw err;
  }
  a.options.onReportJobStarted?.();
  return { job, answeredAt };
}

/**
 * Step 6: polls the report job until the server finished rendering it (docs/report-export-service.md "States and
 * transitions").
 * @returns the finished job with the rows and pages it announced
 * @throws ReportFailedError (FinishedError, the server's whole text), poll errors, AbortedError
 */
export async function waitForReportJob(
  a: Attempt,
  client: ReportClient,
  started: StartedReportJob,
): Promise<FinishedReport> {
  a.stage = 'poll';
  const finished = await client.waitForJob(started.job.id, a.options.signal, started.answeredAt);
  a.log.info({ rows: finished.rows, pages: finished.pages }, 'report job finished');
  return finished;
}

/**
 * Step 7: reads every page into the target in one load transaction, which also records the attempt `succeeded`
 * (and, for append, claims the run key), so that rows and history commit together or not at all. Each page has its
 * pageTimeoutMs, and reading stops at the first page or row past the job's announced `pages=` and `rows=`
 * (docs/architecture.md "Limits").
 * @returns the result; status `already-loaded` when another attempt of the run appended first (nothing added)
 * @throws fetch, parse and load errors naming page and row; PAGE_TIMEOUT; PAGE_COUNT_MISMATCH and ROW_COUNT_MISMATCH;
 *   OVERLAP_LOCK_LOST; ABORTED when a later attempt declared this one dead, or when the signal aborted before the
 *   commit
 */
export async function loadAndCommit(
  a: Attempt,
  client: ReportClient,
  finished: FinishedReport,
  declaredTypes: ReadonlyMap<string, string>,
): Promise<AttemptResult> {
  a.stage = 'load';
  useLoadingFlags();
  const o = a.options;
  const { name, job, connection } = o.job;
  const shape = outputShape(job.report.outputType, job.target);
  // Lines and documents are not report rows: their count says nothing about rows=, the page count does.
  const expectedRows = shape === 'rows' ? finished.rows : undefined;
  const limits = {
    pageTimeoutMs: deadlinesOf(o.job).pageTimeoutMs,
    announced: { pages: finished.pages, rows: expectedRows },
  };
  const rows = reportRows(
    client,
    finished.jobId,
    () => jobDecoder(o.job, a.startedAt),
    a.log,
    o.signal,
    limits,
    a.trace.pages,
  );
  const timed = <T>(step: 'target_delete' | 'copy' | 'apply', fn: () => Promise<T>) => a.trace.step(step, fn);
  let loaded: LoadResult | undefined;
  // The commit step: the attempt's records in the load transaction, then COMMIT (timed to withLoadTransaction's end).
  let commit: StepTimer | undefined;
  try {
    const committed = await withLoadTransaction(
      o.pool,
      { target: a.target, timezone: connection.timezone, signal: o.signal },
      async (tx) => {
        // The guard sees the target as the load would replace it (locked), and typed rows before a page is read.
        const guard = await targetGuard(a, tx);
        if (expectedRows !== undefined) await guard(expectedRows);
        loaded = await loadRows(
          tx,
          {
            job: name,
            target: a.target,
            mode: job.target.mode,
            key: job.target.key,
            declaredTypes,
            schemaChanges: job.target.schemaChanges,
            expectedRows,
            timezone: connection.timezone,
            logger: a.log,
            runKey: a.runKey,
            timed,
          },
          rows,
        );
        if (expectedRows === undefined) await guard(loaded.rows);
        a.pages = rows.pages;
        a.bytes = rows.bytes;
        if (shape !== 'rows' && rows.pages !== finished.pages)
          throw new PageCountMismatchError(finished.pages, rows.pages);
        if (rows.decoder instanceof DocumentPageDecoder)
          await insertRunDocuments(tx, a.attemptId, a.targetTable, rows.decoder.documents);
        // An abort (maxRunMs, a shutdown past its grace) that came while PostgreSQL worked, with no page left to cut, still
        // keeps the attempt from committing.
        throwIfAborted(o.signal);
        a.stage = 'commit';
        commit = a.trace.begin('commit');
        if (
          job.target.mode === 'append' &&
          !(await claimAppend(tx, name, a.runKey, a.attemptId, a.targetTable, loaded.rows))
        )
          return false;
        // The target is locked for this transaction; the overlap lock must still be ours, or another run of the job
        // may be loading too (an older tick must not overwrite a newer one's rows).
        if (o.exclusive && !(await o.exclusive.confirm())) {
          throw new EtlError(
            'OVERLAP_LOCK_LOST',
            'the overlap lock of this job was lost during the attempt (Redis lost its key, or the process stalled past the lock): its rows are not committed; the attempt is retried',
            {
              stage: 'commit',
            },
          );
        }
        if (!(await completeAttempt(tx, a.attemptId, { rows: loaded.rows, pages: a.pages, bytes: a.bytes }))) {
          throw new EtlError(
            'ABORTED',
            'this attempt was declared dead by a later attempt of the same run (it stalled past its lock): its rows are not committed',
            {
              stage: 'commit',
              retryable: false,
            },
          );
        }
        return true;
      },
    ).catch((err: unknown) => {
      commit?.fail(err);
      throw err;
    });
    commit?.end();
    if (!committed) {
      const waits = { todo: 'recording the attempt', done: 'the attempt is recorded' };
      await untilDatabaseTakesIt(a.log, waits, undefined, () =>
        completeAttempt(o.pool, a.attemptId, { rows: 0, pages: a.pages, bytes: a.bytes }),
      );
      a.log.warn(
        { runKey: a.runKey },
        'another attempt of this run committed its rows first: this attempt added nothing',
      );
    }
    const result = resultOf(a, {
      status: committed ? 'succeeded' : 'already-loaded',
      plan: loaded!.plan,
      format: loaded!.format,
      rows: committed ? loaded!.rows : 0,
    });
    a.log.info(
      {
        plan: loaded!.plan,
        format: loaded!.format,
        rows: loaded!.rows,
        pages: a.pages,
        bytes: a.bytes,
        durationMs: Math.round(result.durationMs),
        rowsPerSec: Math.round((loaded!.rows / result.durationMs) * 1000),
      },
      'run succeeded',
    );
    return result;
  } finally {
    a.pages = rows.pages;
    a.bytes = rows.bytes;
    await rows.close();
  }
}

/**
 * The target's guard for this attempt (docs/loaded-tables.md "Guards and schema changes"), inside the load transaction:
 * counts the target's rows now when maxShrinkPercent needs them, and returns the check of a row count. A guard that
 * trips fails the attempt, unless the run asked to accept it (`replay --accept-guard`): then it is logged and recorded
 * on the attempt (`etl.attempts.accepted_guard`) in the same transaction.
 * @throws GuardTrippedError (from the check; not retryable)
 */
async function targetGuard(a: Attempt, tx: Queryable): Promise<(rows: number) => Promise<void>> {
  const { mode, guard } = a.options.job.job.target;
  const currentRows = needsRowCount(mode, guard) ? await countTargetRows(tx, a.target) : undefined;
  return async (rows) => {
    const trip = guardTrip({ table: a.targetTable, mode, guard, rows, currentRows, runKey: a.runKey });
    if (!trip) return;
    if (!a.options.request?.acceptGuard) throw new GuardTrippedError(trip);
    a.log.warn(
      { guard: trip.guard, ...trip.details },
      `loading past the target's guard, as asked (--accept-guard): ${trip.finding}`,
    );
    await recordAcceptedGuard(tx, a.attemptId, trip.finding);
  };
}

/**
 * Step 8, in every outcome once a report job was started: deletes it (docs/report-export-service.md "What the
 * service does"). A failing DELETE is logged with the job id and not thrown: the outcome stands (a committed load
 * stays committed), and the janitor cannot find a job the server still holds by any other way than its id.
 */
export async function deleteReportJob(a: Attempt, client: ReportClient): Promise<void> {
  if (a.reportJobId === undefined) return;
  await client.deleteJob(a.reportJobId).catch((err: unknown) => {
    a.log.warn({ err: coerceError(err).message, reportJobId: a.reportJobId }, 'could not delete the report job');
  });
}

/**
 * After the report job's DELETE, stores where a succeeded attempt's time went (its timeline; a failed attempt's goes
 * with its failure). A database that does not take it is logged, not thrown: the attempt succeeded.
 */
export async function recordTimeline(a: Attempt): Promise<void> {
  await setAttemptTimeline(a.options.pool, a.attemptId, a.trace.timeline()).catch((err: unknown) => {
    a.log.warn({ err: coerceError(err).message }, "could not record the attempt's timeline");
  });
}

/**
 * Records a failed attempt (`failed`, or `interrupted` when aborted) with its stage, kind and the server's words.
 * When PostgreSQL cannot be reached or has no room (often why the attempt failed), tries again with a growing delay
 * until it takes the record, so that the attempt does not stay `running` for good.
 * @returns the error to throw: the typed cause, with the attempt's id
 */
export async function recordFailedAttempt(a: Attempt, raw: unknown): Promise<AttemptFailedError> {
  const o = a.options;
  let err = coerceError(raw);
  // Once the attempt's signal aborted, whatever broke on the way is its consequence: maxRunMs, or a shutdown.
  if (o.signal?.aborted && o.signal.reason instanceof RunDeadlineReached) {
    err = new RunTimeoutError(o.signal.reason.limitMs, {
      stage: a.stage,
      pages: a.pages,
      bytes: a.bytes,
      cancelled: err instanceof StatementCancelledError ? err.cancelled : undefined,
    });
  } else if (o.signal?.aborted && !(err instanceof AbortedError)) err = new AbortedError(o.signal.reason);
  else if (!(err instanceof EtlError) && isConnectionLoss(err)) err = databaseError(err, a.stage);
  if (err instanceof EtlError && !err.stage) err.stage = a.stage;
  const failure = failureOf(err, a.stage, { rows: 0, pages: a.pages, bytes: a.bytes });
  failure.timeline = a.trace.timeline();
  await recordFailure(a, failure);
  a.log.error(
    { code: failure.errorKind, stage: failure.stage, retryable: failure.retryable, reportJobId: a.reportJobId },
    `run ${failure.status}: ${err.message}`,
  );
  return new AttemptFailedError(a.attemptId, err);
}

/**
 * Writes the failure. While PostgreSQL cannot be reached or has no room, again and again: an attempt's end is never
 * dropped (a process killed meanwhile leaves it to the janitor, docs/architecture.md "Liveness").
 */
async function recordFailure(a: Attempt, failure: AttemptFailure): Promise<void> {
  try {
    await untilDatabaseTakesIt(
      a.log,
      { todo: 'recording the failed attempt', done: 'the failed attempt is recorded' },
      undefined,
      () => failAttempt(a.options.pool, a.attemptId, failure),
    );
  } catch (e) {
    a.log.error({ err: coerceError(e).message }, 'could not record the failed run');
  }
}

/**
 * The other attempts of this run still recorded `running`, none of them alive. An attempt whose owner session still
 * holds its lock is loading: starting a second report job would download everything only to find the run committed
 * (append) or to race it (replace, merge), so this attempt fails at once instead.
 * @throws EtlError RUN_IN_PROGRESS (retryable) when another attempt of the run is alive
 */
async function otherAttemptsNotAlive(a: Attempt): Promise<RunningAttempt[]> {
  const pool = a.options.pool;
  const others = (await runningAttempts(pool, a.options.job.name, a.runKey)).filter(
    (r) => r.attempt_id !== a.attemptId,
  );
  const gone = await goneOwners(
    pool,
    others.flatMap((r) => (r.owner_lock ? [r.owner_lock] : [])),
  );
  const live = others.find((r) => r.owner_lock && !gone.has(r.owner_lock));
  if (live) {
    throw new EtlError(
      'RUN_IN_PROGRESS',
      `attempt ${live.attempt} of this run (${live.worker ?? 'unknown worker'}) is still in progress: this attempt started nothing on the server and is retried later`,
      {
        stage: 'start',
        details: { runKey: a.runKey, otherAttemptId: live.attempt_id },
      },
    );
  }
  return others;
}

function resultOf(
  a: Attempt,
  r: Pick<AttemptResult, 'status' | 'plan' | 'rows'> & Partial<Pick<AttemptResult, 'format'>>,
): AttemptResult {
  return {
    attemptId: a.attemptId,
    job: a.options.job.name,
    runKey: a.runKey,
    attempt: a.number,
    pages: a.pages,
    bytes: a.bytes,
    durationMs: performance.now() - a.startedMs,
    reportJobId: a.reportJobId,
    ...r,
  };
}
