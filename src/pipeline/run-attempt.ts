/**
 * runAttempt(): one attempt of a run, from the access token to the committed rows (DESIGN.md "Flow of one run").
 * It records the attempt (numbered from the run history), works out the run's logical time and report parameters,
 * cleans up after dead attempts of the same run when the caller holds the job's overlap lock, starts the report
 * job and records its id before the first poll, polls it to completion, streams every page into PostgreSQL in one
 * transaction together with the attempt's `succeeded` record, and DELETEs the report job in every outcome.
 * Knows nothing of BullMQ; cancellable by AbortSignal (CONVENTIONS.md "Lifecycle").
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import type { Redis } from 'ioredis';
import type { ResolvedJob } from '../config/load.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { AbortedError, coerceError, EtlError, isConnectionLoss } from '../errors.ts';
import { claimAppend, isAppended } from '../history/appends.ts';
import type { AttemptOwner } from '../history/attempt-owner.ts';
import { completeAttempt, failAttempt, failureOf, insertAttempt, runningAttempts, setAttemptReportJob, type AttemptFailure, type RunningAttempt } from '../history/attempts.ts';
import { goneOwners } from '../history/orphans.ts';
import type { Logger } from '../logger.ts';
import { encodeReportName, makeReportClient, withReportJob, type ClientLease, type FinishedReport, type ReportClient, type ReportClients } from '../report-api/index.ts';
import { BINARY_COPY_OUTPUT_TYPES, outputShape, type RunRequest, type RunStage } from '../vocabulary.ts';
import type { CopyFormatUsed, LoadPlan, LoadResult } from '../warehouse/copy-load.ts';
import { databaseError } from '../warehouse/load-errors.ts';
import { parseTableName } from '../warehouse/identifiers.ts';
import { resolveDeclaredTypes } from '../warehouse/target-table.ts';
import { prepareZoneCheck } from '../warehouse/zone-check.ts';
import { connectionAuthStore } from './auth-store.ts';
import { runParameters } from './logical-time.ts';
import { reportRows } from './report-rows.ts';

/**
 * The load stage's modules (decoders, COPY), imported on first use and then kept: a `report-etl run` starts importing
 * them once its report job is started, so that they load while it waits for the server (the first status poll is
 * 250 ms) rather than before its start request (issue 14: start-up cost). A warm worker has them already.
 */
let loadStageModules:
  | Promise<[typeof import('./job-decoder.ts'), typeof import('../pages/decoder.ts'), typeof import('../warehouse/copy-load.ts'), typeof import('../history/run-documents.ts')]>
  | undefined;
function loadStage(): NonNullable<typeof loadStageModules> {
  loadStageModules ??= Promise.all([import('./job-decoder.ts'), import('../pages/decoder.ts'), import('../warehouse/copy-load.ts'), import('../history/run-documents.ts')]);
  // A failed import is thrown where the load stage awaits it, within the attempt, not as an unhandled rejection.
  loadStageModules.catch(() => undefined);
  return loadStageModules;
}

/** Options of {@link runAttempt}. */
export interface AttemptOptions {
  /** The jobs.yaml job, resolved once by the caller (config `resolveJob`). */
  job: ResolvedJob;
  /**
   * The logical run this attempt belongs to: trigger, run key, logical time, explicit parameters. Default: a
   * manual run of its own (run key = the attempt id), logical time now.
   */
  request?: Partial<Omit<RunRequest, 'job'>>;
  pool: pg.Pool;
  /** Holds the access token shared by every process. */
  redis: Redis;
  logger: Logger;
  /** Aborts the attempt: it rolls back, deletes its report job and is recorded `interrupted`. */
  signal?: AbortSignal;
  /** Clients shared across attempts (a worker's). Default: one made for this attempt and closed at its end. */
  clients?: ReportClients;
  /**
   * The job's overlap lock, held by the caller (one run of the job at a time, across processes). With it, attempts
   * of this run still recorded `running` whose owner is gone (or unknown) are dead: their report jobs are deleted
   * and they are recorded `interrupted` first. Before the commit the lock must still be confirmed: an attempt
   * whose lock was lost meanwhile (Redis emptied, a stall past the lock's TTL) does not commit.
   */
  exclusive?: ExclusiveLock;
  /** Name of the process in `etl.runs.worker` (default host:pid). */
  worker?: string;
  /**
   * The process's owner session (history/attempt-owner.ts): recorded with the attempt so that the janitor can close
   * it and delete its report job when the process dies. Without it, only a later attempt of the same run can.
   */
  owner?: AttemptOwner | undefined;
  /**
   * Called once, as soon as the report job is started and its id recorded: work begun here overlaps the wait for
   * the server (the first status poll comes 250 ms later, spec "Recommended values") instead of delaying the start
   * request (issue 14: start-up cost). Not called when the attempt ends before it starts a report job.
   */
  onReportJobStarted?: () => void;
}

/** A lock that makes the caller the only runner of a job (the queue's overlap lock). */
export interface ExclusiveLock {
  /**
   * Checks, now, that the lock is still held (and extends it).
   * @returns false when it was lost or cannot be confirmed (its store unreachable)
   */
  confirm(): Promise<boolean>;
}

/** Outcome of a successful attempt. */
export interface AttemptResult {
  /** `etl.runs.run_id` of the attempt. */
  attemptId: string;
  /** jobs.yaml job name. */
  job: string;
  runKey: string;
  /** 1-based number of the attempt within its run. */
  attempt: number;
  /** already-loaded: an append whose run was already appended by another attempt; nothing was added. */
  status: 'succeeded' | 'already-loaded';
  plan: LoadPlan | 'none';
  /** The COPY format the rows were loaded in (binary for typed columns of an existing target; issue 14). */
  format?: CopyFormatUsed;
  rows: number;
  pages: number;
  bytes: number;
  durationMs: number;
  reportJobId?: string;
}

/** An attempt that failed; recorded in etl.runs / etl.run_errors before this is thrown. `error` is the typed cause. */
export class AttemptFailedError extends Error {
  /** `etl.runs.run_id` of the failed attempt. */
  readonly attemptId: string;
  readonly error: Error;
  readonly code: string;
  readonly retryable: boolean;
  constructor(attemptId: string, error: Error) {
    super(error.message, { cause: error });
    this.name = 'AttemptFailedError';
    this.attemptId = attemptId;
    this.error = error;
    this.code = error instanceof EtlError ? error.code : 'INTERNAL';
    this.retryable = error instanceof EtlError ? error.retryable : false;
  }
}

/** Default name of a process in etl.runs.worker: `host:pid`. */
export function defaultWorkerName(): string {
  return `${hostname()}:${process.pid}`;
}

/**
 * Runs one attempt of a run of `o.job`.
 * @returns figures of the committed load
 * @throws AttemptFailedError (already recorded as failed or interrupted; the target is untouched and the report
 *   job deleted): `.error` is the typed cause, `.retryable` says whether another attempt may help
 */
export async function runAttempt(o: AttemptOptions): Promise<AttemptResult> {
  const r = o.job;
  const { report, target: targetConfig } = r.job;
  const request = o.request ?? {};
  const attemptId = randomUUID();
  const runKey = request.runKey ?? attemptId;
  const target = parseTableName(targetConfig.table);
  const targetTable = `${target.schema}.${target.table}`;
  const started = performance.now();
  const startedAt = new Date();
  const trigger = request.trigger ?? 'manual';
  // Spec "Report naming rules": a bad name fails before any request to the server (thrown in the attempt below).
  let nameError: unknown;
  try {
    encodeReportName(report.name, r.connection.pathEncoding, { job: r.name });
  } catch (err) {
    nameError = err;
  }
  // The report client (its discovery document; a worker's is shared) is made while the attempt is recorded and
  // checked, not after (issue 14: start-up cost); its failure is thrown where the attempt awaits it. An attempt that
  // ends before it needs the client (already loaded, another attempt alive, a config error) does not wait for the
  // server: its own client's discovery is cut, a shared one is released once made.
  const unneeded = new AbortController();
  const clientReady = nameError === undefined ? openReportClient(o, o.signal ? AbortSignal.any([o.signal, unneeded.signal]) : unneeded.signal) : undefined;
  clientReady?.catch(() => undefined);
  let clientTaken = false;
  const releaseClient = async () => {
    if (!clientReady) return;
    const released = clientReady.then((c) => c.release(), () => undefined);
    if (clientTaken) return released;
    unneeded.abort(new Error('the attempt ended before it needed the report client'));
    if (!o.clients) await released;
  };
  let attempt: number;
  try {
    attempt = await insertAttempt(o.pool, {
      attemptId,
      job: r.name,
      runKey,
      scheduledFor: request.scheduledFor ? new Date(request.scheduledFor) : undefined,
      trigger,
      targetTable,
      writeMode: targetConfig.mode,
      worker: o.worker ?? defaultWorkerName(),
      ownerLock: o.owner?.key,
    });
  } catch (err) {
    await releaseClient();
    throw err;
  }
  let log = o.logger.child({ job: r.name, runId: attemptId });
  log.info({ trigger, attempt, runKey, report: report.name, outputType: report.outputType }, 'run started');
  let stage: RunStage = 'config';
  const figures = { pages: 0, bytes: 0 };
  let reportJobId: string | undefined;
  try {
    if (targetConfig.mode === 'append' && (await isAppended(o.pool, r.name, runKey))) {
      await completeAttempt(o.pool, attemptId, { rows: 0, pages: 0, bytes: 0 });
      log.info({ runKey }, 'rows of this run were already appended by an earlier attempt: nothing to do');
      return { attemptId, job: r.name, runKey, attempt, status: 'already-loaded', plan: 'none', rows: 0, pages: 0, bytes: 0, durationMs: performance.now() - started };
    }
    const others = await otherAttemptsNotAlive(o.pool, r.name, runKey, attemptId);
    const dead = o.exclusive ? others : [];
    const declaredTypes = await resolveDeclaredTypes(o.pool, r.name, targetConfig.columns);
    const parameters = runParameters(r, request, new Date());
    if (nameError !== undefined) throw nameError;
    stage = 'token';
    clientTaken = true;
    const { client } = await clientReady!;
    stage = 'start';
    if (dead.length) await clearDeadAttempts(o.pool, client, dead, attempt, log);
    const load = async (finished: FinishedReport): Promise<AttemptResult> => {
      log.info({ rows: finished.rows, pages: finished.pages }, 'report job finished');
      stage = 'load';
      const [{ jobDecoder }, { DocumentPageDecoder }, { loadRows, withLoadTransaction }, { insertRunDocuments }] = await loadStage();
      const type = report.outputType;
      const shape = outputShape(type, targetConfig);
      const decoder = jobDecoder(r, startedAt);
      const rows = reportRows(client, finished.jobId, decoder, log, o.signal);
      let loaded: LoadResult | undefined;
      try {
        const committed = await withLoadTransaction(o.pool, { target, timezone: r.connection.timezone }, async (tx) => {
          // Lines and documents are not report rows: their count says nothing about rows=, the page count does.
          const expectedRows = shape === 'rows' ? finished.rows : undefined;
          loaded = await loadRows(tx, { target, mode: targetConfig.mode, key: targetConfig.key, declaredTypes, expectedRows, timezone: r.connection.timezone, logger: log }, rows);
          figures.pages = rows.pages;
          figures.bytes = rows.bytes;
          if (shape !== 'rows' && rows.pages !== finished.pages) {
            throw new EtlError('PAGE_COUNT_MISMATCH', `page count mismatch: the server reported pages=${finished.pages}, ${rows.pages} pages were read; nothing was committed`, {
              stage: 'load',
              retryable: true,
              details: { expected: finished.pages, loaded: rows.pages },
            });
          }
          if (decoder instanceof DocumentPageDecoder) await insertRunDocuments(tx, attemptId, targetTable, decoder.documents);
          if (targetConfig.mode === 'append' && !(await claimAppend(tx, r.name, runKey, attemptId, targetTable, loaded.rows))) return false;
          // The target is locked for this transaction; the overlap lock must still be ours, or another run of the
          // job may be loading too (an older tick must not overwrite a newer one's rows).
          if (o.exclusive && !(await o.exclusive.confirm())) {
            throw new EtlError('OVERLAP_LOCK_LOST', 'the overlap lock of this job was lost during the attempt (Redis lost its key, or the process stalled past the lock): its rows are not committed; the attempt is retried', {
              stage: 'commit',
            });
          }
          if (!(await completeAttempt(tx, attemptId, { rows: loaded.rows, ...figures }))) {
            throw new EtlError('ABORTED', 'this attempt was declared dead by a later attempt of the same run (it stalled past its lock): its rows are not committed', {
              stage: 'commit',
              retryable: false,
            });
          }
          return true;
        });
        if (!committed) {
          await completeAttempt(o.pool, attemptId, { rows: 0, ...figures });
          log.warn({ runKey }, 'another attempt of this run committed its rows first: this attempt added nothing');
        }
        const durationMs = performance.now() - started;
        const rowCount = committed ? loaded!.rows : 0;
        log.info(
          { plan: loaded!.plan, format: loaded!.format, rows: loaded!.rows, ...figures, durationMs: Math.round(durationMs), rowsPerSec: Math.round((loaded!.rows / durationMs) * 1000) },
          'run succeeded',
        );
        return { attemptId, job: r.name, runKey, attempt, status: committed ? 'succeeded' : 'already-loaded', plan: loaded!.plan, format: loaded!.format, rows: rowCount, ...figures, durationMs, reportJobId: finished.jobId };
      } finally {
        figures.pages = rows.pages;
        figures.bytes = rows.bytes;
        await rows.close();
      }
    };
    return await withReportJob(client, { ...report, job: r.name, parameters }, load, {
      signal: o.signal,
      logger: log,
      onStarted: async (job) => {
        reportJobId = job.id;
        log = log.child({ reportJobId });
        await setAttemptReportJob(o.pool, attemptId, job.id);
        // The load stage's modules, the zone check of a load that may go binary, and the caller's own work load and
        // run while the server renders the report.
        loadStage();
        if (BINARY_COPY_OUTPUT_TYPES.includes(report.outputType) && outputShape(report.outputType, targetConfig) === 'rows') prepareZoneCheck(o.pool, r.connection.timezone);
        o.onReportJobStarted?.();
      },
    });
  } catch (raw) {
    let err = coerceError(raw);
    if (o.signal?.aborted && !(err instanceof AbortedError)) err = new AbortedError(o.signal.reason);
    else if (!(err instanceof EtlError) && isConnectionLoss(err)) err = databaseError(err, stage);
    if (err instanceof EtlError && !err.stage) err.stage = stage;
    const failure = failureOf(err, stage, { rows: 0, ...figures });
    await recordFailure(o.pool, attemptId, failure, log);
    log.error({ code: failure.errorKind, stage: failure.stage, retryable: failure.retryable, reportJobId }, `run ${failure.status}: ${err.message}`);
    throw new AttemptFailedError(attemptId, err);
  } finally {
    await releaseClient();
  }
}

/**
 * The attempt's report client: a lease on the caller's shared one (a worker's `clients`), else one of its own for
 * this attempt, closed by `release`.
 * @param signal cuts the discovery of an own client (AbortedError)
 * @throws what makeReportClient throws (discovery: ServerUnreachableError, TokenError, AbortedError; ConfigError)
 */
async function openReportClient(o: AttemptOptions, signal: AbortSignal): Promise<{ client: ReportClient; release: () => Promise<void> }> {
  const r = o.job;
  if (o.clients) {
    const lease: ClientLease = await o.clients.acquire(r.connectionName, r.connection);
    return { client: lease.client, release: async () => lease.release() };
  }
  const authStore = connectionAuthStore(o.pool, r.connectionName, r.connection);
  const client = await makeReportClient({ connection: r.connection, connectionName: r.connectionName, redis: o.redis, logger: o.logger, authStore, signal });
  return { client, release: () => client.close().catch(() => undefined) };
}

/** How long an attempt whose database went away keeps trying to record its end, in ms (then it logs and gives up). */
export const RECORD_FAILURE_DEADLINE_MS = 120_000;

/**
 * Records the attempt's failure. When PostgreSQL cannot be reached (a lost connection is often why the attempt
 * failed), tries again with a growing delay (250 ms, doubling, at most 10 s) until it is back or
 * {@link RECORD_FAILURE_DEADLINE_MS} has passed, so that the attempt does not stay `running` for good.
 */
async function recordFailure(pool: pg.Pool, attemptId: string, failure: AttemptFailure, log: Logger): Promise<void> {
  const started = Date.now();
  let waiting = false;
  for (let delay = 250; ; delay = Math.min(delay * 2, 10_000)) {
    try {
      await failAttempt(pool, attemptId, failure);
      if (waiting) log.info({ waitedMs: Date.now() - started }, 'PostgreSQL is back: the failed attempt is recorded');
      return;
    } catch (e) {
      const waited = Date.now() - started;
      if (!isConnectionLoss(e) || waited >= RECORD_FAILURE_DEADLINE_MS) {
        log.error({ err: coerceError(e).message, waitedMs: waited }, 'could not record the failed run');
        return;
      }
      if (!waiting) log.warn({ err: coerceError(e).message }, 'PostgreSQL cannot be reached: recording the failed attempt once it is back');
      waiting = true;
      await sleep(delay);
    }
  }
}

/**
 * The other attempts of this run still recorded `running`, none of them alive. An attempt whose owner session still
 * holds its lock is loading: starting a second report job would download everything only to find the run committed
 * (append) or to race it (replace, merge), so this attempt fails at once instead.
 * @throws EtlError RUN_IN_PROGRESS (retryable) when another attempt of the run is alive
 */
async function otherAttemptsNotAlive(pool: pg.Pool, job: string, runKey: string, attemptId: string): Promise<RunningAttempt[]> {
  const others = (await runningAttempts(pool, job, runKey)).filter((a) => a.run_id !== attemptId);
  const gone = await goneOwners(pool, others.flatMap((a) => (a.owner_lock ? [a.owner_lock] : [])));
  const live = others.find((a) => a.owner_lock && !gone.has(a.owner_lock));
  if (live) {
    throw new EtlError('RUN_IN_PROGRESS', `attempt ${live.attempt} of this run (${live.worker ?? 'unknown worker'}) is still in progress: this attempt started nothing on the server and is retried later`, {
      stage: 'start',
      details: { runKey, otherRunId: live.run_id },
    });
  }
  return others;
}

/**
 * Deletes the report jobs that dead attempts of this run left on the server (their id is in
 * etl.runs.report_job_id) and records those attempts interrupted. Only called while holding the job's overlap lock.
 */
async function clearDeadAttempts(pool: pg.Pool, client: ReportClient, dead: readonly RunningAttempt[], attempt: number, log: Logger): Promise<void> {
  for (const d of dead) {
    let deleted = 'no report job was started';
    if (d.report_job_id) {
      await client.deleteJob(d.report_job_id);
      deleted = `its report job ${d.report_job_id} was deleted`;
    }
    const message = `attempt ${d.attempt} was abandoned by its worker (${d.worker ?? 'unknown'}: stopped or lost its lock); ${deleted} by attempt ${attempt}`;
    await failAttempt(pool, d.run_id, { status: 'interrupted', stage: 'load', errorKind: 'ABORTED', retryable: true, message, details: { reportJobId: d.report_job_id } });
    log.warn({ deadRunId: d.run_id, reportJobId: d.report_job_id }, 'cleaned up after a dead attempt');
  }
}
