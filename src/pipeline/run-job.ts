/**
 * runJob(): one run of one job, from the access token to the committed rows (DESIGN.md "Flow of one run").
 * Start the report job, poll it to completion, stream every page into PostgreSQL in one transaction, record the
 * run, and DELETE the report job in every outcome. Knows nothing of BullMQ; cancellable by AbortSignal.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import type { Redis } from 'ioredis';
import type { EtlConfig } from '../config/schema.ts';
import { getJob } from '../config/load.ts';
import { AbortedError, coerceError, EtlError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { makePageDecoder } from '../pages/decoder.ts';
import { encodeReportName, makeReportClient, type ReportClient } from '../report-api/index.ts';
import { loadReport, type LoadPlan } from '../warehouse/copy-load.ts';
import { parseTableName } from '../warehouse/identifiers.ts';
import { claimAppend, isAppended } from '../history/appends.ts';
import { completeAttempt, failAttempt, failureOf, insertAttempt, setAttemptReportJob } from '../history/attempts.ts';
import type { RunTrigger } from '../vocabulary.ts';
import { resolveDeclaredTypes } from '../warehouse/target-table.ts';
import { makeProgress, pageOfRow, reportChunks } from './page-chunks.ts';

/** Options of {@link runJob}. */
export interface RunJobOptions {
  config: EtlConfig;
  /** Job name in jobs.yaml. */
  job: string;
  pool: pg.Pool;
  redis: Redis;
  logger: Logger;
  signal?: AbortSignal;
  /** Id of this attempt (default: a new UUID). */
  runId?: string;
  /** The logical run all attempts and replays share (default: the runId). Append loads are exactly-once per key. */
  runKey?: string;
  trigger?: RunTrigger;
  /** The tick this run stands for, if scheduled. */
  scheduledFor?: Date;
  /** Report parameters that override the job's (e.g. FROM/TO of a logical run). */
  parameters?: Record<string, string>;
  /**
   * The client to use, or a function that gives it (called inside the run, so a failing discovery is recorded as
   * this attempt's failure); the caller closes it. Default: one made for this run and closed at its end.
   */
  client?: ReportClient | (() => Promise<ReportClient>);
  /** Runs once the client is there and before the report starts (e.g. deleting a dead attempt's report job). */
  beforeStart?: (client: ReportClient, attempt: number) => Promise<void>;
  /** Name of the worker in the run history (default host:pid). */
  worker?: string;
}

/** Outcome of a successful run. */
export interface RunResult {
  runId: string;
  job: string;
  status: 'succeeded' | 'already-loaded';
  plan: LoadPlan | 'none';
  rows: number;
  pages: number;
  bytes: number;
  durationMs: number;
  reportJobId?: string;
}

/** A run that failed; recorded in etl.runs / etl.run_errors before this is thrown. `error` is the typed cause. */
export class RunFailedError extends Error {
  readonly runId: string;
  readonly error: Error;
  readonly code: string;
  readonly retryable: boolean;
  constructor(runId: string, error: Error) {
    super(error.message, { cause: error });
    this.name = 'RunFailedError';
    this.runId = runId;
    this.error = error;
    this.code = error instanceof EtlError ? error.code : 'INTERNAL';
    this.retryable = error instanceof EtlError ? error.retryable : false;
  }
}

/**
 * Runs one job once.
 * @returns figures of the committed load
 * @throws RunFailedError (already recorded as failed or interrupted; the target is untouched and the report job
 *   deleted) — `.error` is the typed cause, `.retryable` says whether another attempt may help
 * @throws ConfigError for an unknown job (nothing recorded: there is no job to record it under)
 */
export async function runJob(o: RunJobOptions): Promise<RunResult> {
  const { job, connection, connectionName } = getJob(o.config, o.job);
  const runId = o.runId ?? randomUUID();
  const runKey = o.runKey ?? runId;
  const target = parseTableName(job.target.table);
  const log = o.logger.child({ job: o.job, runId });
  const started = performance.now();
  const attempt = await insertAttempt(o.pool, {
    attemptId: runId,
    job: o.job,
    runKey,
    scheduledFor: o.scheduledFor,
    trigger: o.trigger ?? 'manual',
    targetTable: `${target.schema}.${target.table}`,
    writeMode: job.target.mode,
    worker: o.worker ?? `${hostname()}:${process.pid}`,
  });
  log.info({ trigger: o.trigger ?? 'manual', attempt, report: job.report.name, outputType: job.report.outputType }, 'run started');
  const progress = makeProgress();
  let rows = 0;
  let stage: 'config' | 'token' | 'start' | 'load' = 'config';
  let client: ReportClient | undefined;
  let reportJobId: string | undefined;
  let deleteError: unknown;
  try {
    if (job.target.mode === 'append' && (await isAppended(o.pool, o.job, runKey))) {
      await completeAttempt(o.pool, runId, { rows: 0, pages: 0, bytes: 0 });
      log.info({ runKey }, 'rows of this run were already appended by an earlier attempt: nothing to do');
      return { runId, job: o.job, status: 'already-loaded', plan: 'none', rows: 0, pages: 0, bytes: 0, durationMs: performance.now() - started };
    }
    const declaredTypes = await resolveDeclaredTypes(o.pool, o.job, job.target.columns);
    // Spec "Report naming rules": a bad name fails before any request.
    encodeReportName(job.report.name, connection.pathEncoding, { job: o.job });
    stage = 'token';
    client =
      typeof o.client === 'function'
        ? await o.client()
        : (o.client ?? (await makeReportClient({ connection, connectionName, redis: o.redis, logger: o.logger, ...(o.signal ? { signal: o.signal } : {}) })));
    stage = 'start';
    await o.beforeStart?.(client, attempt);
    const reportJob = await client.startReport({ ...job.report, job: o.job, parameters: { ...job.report.parameters, ...o.parameters } }, o.signal);
    reportJobId = reportJob.id;
    const runLog = log.child({ reportJobId });
    await setAttemptReportJob(o.pool, runId, reportJob.id);
    try {
      const finished = await client.waitForJob(reportJob.id, o.signal);
      runLog.info({ rows: finished.rows, pages: finished.pages }, 'report job finished');
      stage = 'load';
      const decoder = makePageDecoder(job.report.outputType);
      const db = await o.pool.connect();
      try {
        const result = await loadReport({
          db,
          target,
          mode: job.target.mode,
          key: job.target.key,
          declaredTypes,
          decoder,
          chunks: reportChunks(client, reportJob.id, decoder, progress, runLog, o.signal),
          timezone: connection.timezone,
          expectedRows: () => finished.rows,
          pageOfRow: (row) => pageOfRow(progress, row),
          logger: runLog,
          beforeCommit: async (tx, loaded) => {
            rows = loaded;
            if (job.target.mode === 'append' && !(await claimAppend(tx, o.job, runKey, runId, `${target.schema}.${target.table}`, loaded))) {
              return false;
            }
            if (!(await completeAttempt(tx, runId, { rows: loaded, pages: progress.pages, bytes: progress.bytes }))) {
              throw new EtlError('ABORTED', 'this attempt was declared dead by a later attempt of the same run (it stalled past its lock): its rows are not committed', {
                stage: 'commit',
                retryable: false,
              });
            }
            return true;
          },
        });
        if (!result.committed) {
          await completeAttempt(o.pool, runId, { rows: 0, pages: progress.pages, bytes: progress.bytes });
          runLog.warn({ runKey }, 'another attempt of this run committed its rows first: this attempt added nothing');
        }
        const durationMs = performance.now() - started;
        runLog.info(
          { plan: result.plan, rows, pages: progress.pages, bytes: progress.bytes, durationMs: Math.round(durationMs), rowsPerSec: Math.round((rows / durationMs) * 1000) },
          'run succeeded',
        );
        return {
          runId,
          job: o.job,
          status: result.committed ? 'succeeded' : 'already-loaded',
          plan: result.plan,
          rows: result.committed ? rows : 0,
          pages: progress.pages,
          bytes: progress.bytes,
          durationMs,
          reportJobId,
        };
      } finally {
        db.release();
      }
    } finally {
      // Spec "What the service does" 3.4: the job is closed in every outcome, even when the run was aborted.
      await client.deleteJob(reportJob.id).catch((err: unknown) => {
        deleteError = err;
        runLog.warn({ err: coerceError(err).message }, 'could not delete the report job');
      });
    }
  } catch (raw) {
    let err = coerceError(raw);
    if (o.signal?.aborted && !(err instanceof AbortedError)) err = new AbortedError(o.signal.reason);
    if (err instanceof EtlError && !err.stage) err.stage = stage;
    const failure = failureOf(err, stage, { rows: 0, pages: progress.pages, bytes: progress.bytes });
    await failAttempt(o.pool, runId, failure).catch((e: unknown) => log.error({ err: coerceError(e).message }, 'could not record the failed run'));
    log.error({ code: failure.errorKind, stage: failure.stage, retryable: failure.retryable, reportJobId, deleteError: deleteError ? String(deleteError) : undefined }, `run ${failure.status}: ${err.message}`);
    throw new RunFailedError(runId, err);
  } finally {
    if (client && o.client === undefined) await client.close().catch(() => undefined);
  }
}
