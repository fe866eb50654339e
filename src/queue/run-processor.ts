/**
 * What a worker does with one queued run (docs/architecture.md "Flow of one run"): skip a run that succeeded, hold
 * the overlap lock, record the run request, call runAttempt, and map the outcome onto BullMQ: a non-retryable
 * failure is unrecoverable, an attempt interrupted by shutdown goes back to the queue without using up an attempt.
 */
import type pg from 'pg';
import type { Redis } from 'ioredis';
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { EtlConfig } from '../config/schema.ts';
import { resolveJob, type ResolvedJob } from '../config/load.ts';
import { parseSubject } from '../config/mandants.ts';
import { AbortedError, coerceError, ConfigError, EtlError } from '../errors.ts';
import { untilDatabaseTakesIt } from '../db.ts';
import { failAttempt, failureOf, hasSucceeded } from '../history/attempts.ts';
import { summaryLine } from '../failure-text.ts';
import { shellQuote } from '../shell-quote.ts';
import { recordRunRequest, forgetQueuedRun } from '../history/runs.ts';
import type { Logger } from '../logger.ts';
import { AttemptFailedError, runAttempt } from '../pipeline/run-attempt.ts';
import type { AttemptOwner } from '../history/attempt-owner.ts';
import { noRunAlerts, type RunAlerts } from '../alerts/run-alerts.ts';
import type { ReportClients } from '../report-api/index.ts';
import type { ReportSlots } from '../report-api/report-slots.ts';
import {
  ATTR,
  contextWith,
  extractTrace,
  failSpan,
  runTracer,
  SpanKind,
  startSpan,
  traceIdOf,
  type Span,
} from '../tracing.ts';
import { TICK_TRIGGERS } from '../vocabulary.ts';
import { overlapLockKey } from './names.ts';
import { tryOverlapLock } from './overlap-lock.ts';
import { queuedRunAttributes, type QueuedRun } from './queue.ts';

/** What a finished queued run returns (the BullMQ job's return value). */
export interface RunOutcome {
  status: 'succeeded' | 'already-loaded' | 'already-succeeded' | 'skipped-overlap';
  /** The attempt that succeeded (the run is the queue job's run key). */
  attemptId?: string;
  rows?: number;
  pages?: number;
  bytes?: number;
  durationMs?: number;
}

/** What {@link processRun} needs. */
export interface ProcessDeps {
  /** Read at the start of every run. */
  config: () => EtlConfig;
  pool: pg.Pool;
  redis: Redis;
  logger: Logger;
  clients: ReportClients;
  /** Without them no maxConcurrentReports applies. */
  slots?: ReportSlots | undefined;
  prefix: string;
  /** Recheck interval under `overlap: wait`, in ms. */
  overlapRetryMs: number;
  overlapLockTtlMs: number;
  /** Name in etl.attempts.worker. */
  workerName: string;
  /** Whether the worker is shutting down: an abort then means "queue again". */
  shuttingDown: () => boolean;
  /** Registers a running run's controller for shutdown; returns the unregister function. */
  track: (controller: AbortController) => () => void;
  /** Recorded with every attempt; without it a dead worker's attempts wait for a later one of their run. */
  owner?: AttemptOwner | undefined;
  alerts?: RunAlerts | undefined;
  /** Problems of the invalid jobs by name, for a clear failure of their queued runs. */
  invalidJobs?: (() => Map<string, string[]>) | undefined;
}

/**
 * Processes one queued run (the BullMQ processor).
 * @param signal BullMQ's per-job abort signal (Worker.cancelJob)
 * @returns the outcome (stored as the job's return value)
 * @throws UnrecoverableError for config problems and non-retryable run failures; DelayedError when the run
 *   went back to the queue (overlap wait, shutdown); Error for a retryable failure (BullMQ retries with backoff)
 */
export async function processRun(
  deps: ProcessDeps,
  queueJob: Job<QueuedRun>,
  token: string | undefined,
  signal: AbortSignal | undefined,
): Promise<RunOutcome> {
  const req = queueJob.data;
  // The run's trace goes on from its enqueue span (docs/observability.md "Tracing"), one span per take of its job.
  const span = startSpan(runTracer(), 'process run', extractTrace(req), {
    kind: SpanKind.CONSUMER,
    attributes: {
      ...queuedRunAttributes(req, queueJob.id ?? '', 'process'),
      [ATTR.queueAttemptsMade]: queueJob.attemptsMade,
    },
  });
  try {
    const outcome = await processTraced(deps, queueJob, token, signal, span);
    span.setAttribute(ATTR.status, outcome.status);
    span.end();
    return outcome;
  } catch (err) {
    if (err instanceof DelayedError) span.end();
    else failSpan(span, err);
    throw err;
  }
}

/** {@link processRun} inside its span. */
async function processTraced(
  deps: ProcessDeps,
  queueJob: Job<QueuedRun>,
  token: string | undefined,
  signal: AbortSignal | undefined,
  span: Span,
): Promise<RunOutcome> {
  const req = queueJob.data;
  const traceId = traceIdOf(span);
  const log = deps.logger.child({
    job: req.job,
    queueJobId: queueJob.id,
    runKey: req.runKey,
    ...(traceId ? { traceId } : {}),
  });
  const config = deps.config();
  let resolved: ResolvedJob;
  try {
    resolved = resolveJob(config, req.job);
  } catch (err) {
    const problems = deps.invalidJobs?.().get(parseSubject(req.job).job);
    if (problems)
      throw new UnrecoverableError(
        `jobs.yaml: job "${req.job}" is invalid, so its runs are not run until it is fixed:\n${problems.join('\n')}`,
      );
    throw new UnrecoverableError(
      `${coerceError(err).message} (the job was removed from jobs.yaml after this run was queued)`,
    );
  }
  // A full or restarting PostgreSQL is waited for here too: a capacity error must not use up the run's retries.
  const waits = { todo: 'the run starts', done: 'the run goes on' };
  // Any run, not only a tick: a worker may die after its commit, before BullMQ heard of it, and its queue job is
  // taken again once it stalled.
  if (await untilDatabaseTakesIt(log, waits, signal, () => hasSucceeded(deps.pool, req.job, req.runKey))) {
    log.info(
      TICK_TRIGGERS.has(req.trigger)
        ? 'this tick already succeeded: nothing to do'
        : 'this run already succeeded (its worker committed, then died before finishing its queue job): nothing to do',
    );
    return { status: 'already-succeeded' };
  }
  const lock = await tryOverlapLock(
    deps.redis,
    overlapLockKey(deps.prefix, req.job),
    queueJob.id!,
    log,
    deps.overlapLockTtlMs,
  );
  if (!lock) {
    if (resolved.job.overlap === 'skip') {
      log.warn('the previous run of this job is still going: skipped (overlap: skip)');
      await untilDatabaseTakesIt(log, waits, signal, () => forgetQueuedRun(deps.pool, req.job, req.runKey));
      return { status: 'skipped-overlap' };
    }
    log.info(
      { retryInMs: deps.overlapRetryMs },
      'the previous run of this job is still going: waiting (overlap: wait)',
    );
    await queueJob.moveToDelayed(Date.now() + deps.overlapRetryMs, token);
    throw new DelayedError();
  }
  const alerts = deps.alerts ?? noRunAlerts;
  const run = { job: req.job, runKey: req.runKey, trigger: req.trigger };
  const controller = new AbortController();
  const untrack = deps.track(controller);
  const onBullAbort = () => controller.abort(signal?.reason ?? new Error('cancelled'));
  signal?.addEventListener('abort', onBullAbort, { once: true });
  try {
    await untilDatabaseTakesIt(log, waits, controller.signal, () =>
      recordRunRequest(deps.pool, { ...req, queueJobId: queueJob.id!, queuedAt: new Date(queueJob.timestamp) }),
    );
    const { status, attemptId, rows, pages, bytes, durationMs } = await runAttempt({
      job: resolved,
      request: req,
      pool: deps.pool,
      redis: deps.redis,
      logger: deps.logger,
      signal: controller.signal,
      clients: deps.clients,
      slots: deps.slots,
      exclusive: lock,
      worker: deps.workerName,
      owner: deps.owner,
      traceParent: contextWith(span),
    });
    await alerts.succeeded({ ...run, attemptId });
    return { status, attemptId, rows, pages, bytes, durationMs: Math.round(durationMs) };
  } catch (err) {
    if (err instanceof AttemptFailedError) {
      if (err.closedElsewhere) {
        // Closed by another process while it ran (its owner session was lost), which recorded it; a janitor also
        // handed the run back. A failure here is a consequence: back to the queue if this worker still holds the
        // run, without using up an attempt; no alert.
        log.warn(
          { attemptId: err.attemptId, closedAs: err.closedElsewhere },
          "attempt closed by another process while it ran: its failure here is not the run's; the run goes on",
        );
        await queueJob.moveToDelayed(Date.now(), token).catch(() => undefined);
        throw new DelayedError();
      }
      if (controller.signal.aborted && deps.shuttingDown()) {
        // Recorded interrupted; back to the queue for another worker, without using up an attempt.
        log.warn({ attemptId: err.attemptId }, 'attempt interrupted by shutdown: run queued again');
        await queueJob.moveToDelayed(Date.now(), token);
        throw new DelayedError();
      }
      const text = `${err.code}: ${err.message} (attempt ${err.attemptId})`;
      // The last attempt BullMQ will make: attemptsMade counts the ones before this one.
      let final = !err.retryable || queueJob.attemptsMade + 1 >= (queueJob.opts.attempts ?? 1);
      let error = err.error;
      if (!final && !controller.signal.aborted && (await queueJobGone(queueJob))) {
        // Nothing is left to retry it: the run ends here, said so in its history and its alert.
        error = await recordQueueJobLost(deps.pool, req, queueJob.id!, err);
        log.error({ attemptId: err.attemptId }, error.message);
        final = true;
      }
      if (final && !controller.signal.aborted) await alerts.failed({ ...run, attemptId: err.attemptId, error });
      throw err.retryable && !final ? new Error(text, { cause: err }) : new UnrecoverableError(text);
    }
    if (err instanceof ConfigError) throw new UnrecoverableError(err.message);
    if (err instanceof AbortedError && deps.shuttingDown()) {
      // Aborted while it waited for a report slot: nothing was recorded; back to the queue for another worker.
      log.warn('shutdown while waiting for a report slot: queued again');
      await queueJob.moveToDelayed(Date.now(), token);
      throw new DelayedError();
    }
    throw err;
  } finally {
    signal?.removeEventListener('abort', onBullAbort);
    untrack();
    await lock
      .release()
      .catch((e: unknown) => log.warn({ err: coerceError(e).message }, 'could not release the overlap lock'));
  }
}

/** Whether the queue job no longer exists in Redis (lost with its data); false when Redis cannot tell now. */
async function queueJobGone(queueJob: Job<QueuedRun>): Promise<boolean> {
  return (await queueJob.getState().catch(() => undefined)) === 'unknown';
}

/**
 * Records that a failed attempt's run will not be retried because its queue job is gone (Redis lost its data, e.g.
 * a restart without persistence): an etl.run_errors row QUEUE_JOB_LOST, not retryable, saying how to replay it, which
 * becomes the attempt's text (its first failure's may promise a retry).
 * @returns the error for the failed alert; never throws (a history that cannot be written is logged by the caller)
 */
async function recordQueueJobLost(
  pool: pg.Pool,
  req: QueuedRun,
  queueJobId: string,
  err: AttemptFailedError,
): Promise<EtlError> {
  const error = new EtlError(
    'QUEUE_JOB_LOST',
    `not retried: its queue job ${queueJobId} is gone from Redis (Redis lost its data, e.g. a restart without ` +
      `persistence): report-etl replay ${shellQuote(req.runKey)} --job ${shellQuote(req.job)}; the attempt had ` +
      `failed with ${err.code}: ${summaryLine(err.message)}`,
    { retryable: false, stage: err.error instanceof EtlError ? err.error.stage : undefined, cause: err.error },
  );
  await failAttempt(pool, err.attemptId, failureOf(error, 'commit')).catch(() => undefined);
  return error;
}
