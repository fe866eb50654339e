/**
 * What a worker does with one queued run (issue 4 "Worker"): skip a tick that already succeeded, hold the
 * job's overlap lock, clean up after a dead attempt, render the run's logical time into the report parameters,
 * and call the pipeline's runJob. Maps the outcome onto BullMQ: a non-retryable failure is an
 * UnrecoverableError (no further attempts), a run interrupted by shutdown goes back to the queue without using
 * up an attempt. Each attempt is one etl.runs row (runJob records it).
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import type { Redis } from 'ioredis';
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { EtlConfig } from '../config/schema.ts';
import { getJob, type ResolvedJob } from '../config/load.ts';
import { coerceError, ConfigError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { runJob, RunFailedError } from '../pipeline/run-job.ts';
import { failAttempt, hasSucceeded, runningAttempts } from '../history/attempts.ts';
import { cronTicks } from './cron-ticks.ts';
import { renderParameters } from './logical-time.ts';
import { overlapLockKey } from './names.ts';
import { tryOverlapLock } from './overlap-lock.ts';
import type { QueuedRun } from './queue.ts';
import { TICK_TRIGGERS, type RunRequest } from '../vocabulary.ts';
import type { ClientLease, ReportClients } from '../report-api/client-registry.ts';
import type { ReportClient } from '../report-api/index.ts';
import { recordRunRequest } from '../history/run-requests.ts';

/** What a finished queued run returns (the BullMQ job's return value). */
export interface RunOutcome {
  status: 'succeeded' | 'already-loaded' | 'already-succeeded' | 'skipped-overlap';
  runId?: string;
  rows?: number;
  pages?: number;
  bytes?: number;
  durationMs?: number;
}

/** What {@link processRun} needs. */
export interface ProcessDeps {
  config: () => EtlConfig;
  pool: pg.Pool;
  redis: Redis;
  logger: Logger;
  clients: ReportClients;
  prefix: string;
  /** How long a run waits before it looks at the overlap lock again (overlap: wait), in ms. */
  overlapRetryMs: number;
  overlapLockTtlMs: number;
  /** Name in etl.runs.worker. */
  workerName: string;
  /** Whether the worker is shutting down (an abort then means "interrupted, retry elsewhere"). */
  shuttingDown: () => boolean;
  /** Registers the controller of a running run so shutdown can abort it; returns the unregister function. */
  track: (controller: AbortController) => () => void;
}

/** The report parameters of a run: jobs.yaml's with `%{...}` rendered, then the request's explicit ones. */
export function runParameters(r: ResolvedJob, req: RunRequest, now: Date): Record<string, string> {
  const zone = r.zone;
  const logicalEnd = new Date(req.logicalEnd ?? req.scheduledFor ?? now.toISOString());
  let logicalStart = req.logicalStart ? new Date(req.logicalStart) : undefined;
  if (!logicalStart && r.job.schedule) logicalStart = cronTicks(r.job.schedule, zone).previous(logicalEnd);
  const tick = req.scheduledFor ? new Date(req.scheduledFor) : logicalEnd;
  const rendered = renderParameters(r.job.report.parameters, { tick, logicalStart: logicalStart ?? logicalEnd, logicalEnd }, zone, `jobs.${r.name}.report.parameters`);
  return { ...rendered, ...req.parameters };
}

/**
 * Deletes the report jobs attempts of this logical run left on the server when their worker died (their id is in
 * etl.runs.report_job_id), and records those attempts interrupted. Called while holding the overlap lock.
 * @returns how many dead attempts were cleaned up
 */
export async function recoverDeadAttempts(deps: Pick<ProcessDeps, 'pool' | 'logger'>, client: ReportClient, r: ResolvedJob, runKey: string, attempt: number, ownRunId: string): Promise<number> {
  const dead = (await runningAttempts(deps.pool, r.name, runKey)).filter((d) => d.run_id !== ownRunId);
  for (const d of dead) {
    let deleted = 'no report job was started';
    if (d.report_job_id) {
      await client.deleteJob(d.report_job_id);
      deleted = `its report job ${d.report_job_id} was deleted`;
    }
    const message = `attempt ${d.attempt} was abandoned by its worker (${d.worker ?? 'unknown'}: stopped or lost its lock); ${deleted} by attempt ${attempt}`;
    await failAttempt(deps.pool, d.run_id, { status: 'interrupted', stage: 'load', errorKind: 'ABORTED', retryable: true, message, details: { reportJobId: d.report_job_id } });
    deps.logger.warn({ deadRunId: d.run_id, reportJobId: d.report_job_id }, 'cleaned up after a dead attempt');
  }
  return dead.length;
}

/**
 * Processes one queued run (the BullMQ processor).
 * @param signal BullMQ's per-job abort signal (Worker.cancelJob)
 * @returns the outcome (stored as the job's return value)
 * @throws UnrecoverableError for config problems and non-retryable run failures; DelayedError when the run
 *   went back to the queue (overlap wait, shutdown); Error for a retryable failure (BullMQ retries with backoff)
 */
export async function processRun(deps: ProcessDeps, bjob: Job<QueuedRun>, token: string | undefined, signal: AbortSignal | undefined): Promise<RunOutcome> {
  const req = bjob.data;
  const log = deps.logger.child({ job: req.job, queueJobId: bjob.id, runKey: req.runKey });
  const config = deps.config();
  let resolved: ResolvedJob;
  try {
    resolved = getJob(config, req.job);
  } catch (err) {
    throw new UnrecoverableError(`${coerceError(err).message} (the job was removed from jobs.yaml after this run was queued)`);
  }
  if (TICK_TRIGGERS.has(req.trigger) && (await hasSucceeded(deps.pool, req.job, req.runKey))) {
    log.info('this tick already succeeded: nothing to do');
    return { status: 'already-succeeded' };
  }
  const lock = await tryOverlapLock(deps.redis, overlapLockKey(deps.prefix, req.job), bjob.id!, log, deps.overlapLockTtlMs);
  if (!lock) {
    if (resolved.job.overlap === 'skip') {
      log.warn('the previous run of this job is still going: skipped (overlap: skip)');
      return { status: 'skipped-overlap' };
    }
    log.info({ retryInMs: deps.overlapRetryMs }, 'the previous run of this job is still going: waiting (overlap: wait)');
    await bjob.moveToDelayed(Date.now() + deps.overlapRetryMs, token);
    throw new DelayedError();
  }
  const controller = new AbortController();
  const untrack = deps.track(controller);
  const onBullAbort = () => controller.abort(signal?.reason ?? new Error('cancelled'));
  signal?.addEventListener('abort', onBullAbort, { once: true });
  let lease: ClientLease | undefined;
  try {
    const runId = randomUUID();
    await recordRunRequest(deps.pool, {
      job: req.job,
      runKey: req.runKey,
      queueJobId: bjob.id!,
      trigger: req.trigger,
      scheduledFor: req.scheduledFor ? new Date(req.scheduledFor) : undefined,
      logicalStart: req.logicalStart ? new Date(req.logicalStart) : undefined,
      logicalEnd: req.logicalEnd ? new Date(req.logicalEnd) : undefined,
      parameters: req.parameters,
    });
    let parameters: Record<string, string>;
    try {
      parameters = runParameters(resolved, req, new Date());
    } catch (err) {
      throw new UnrecoverableError(coerceError(err).message);
    }
    const result = await runJob({
      config,
      job: req.job,
      pool: deps.pool,
      redis: deps.redis,
      logger: deps.logger,
      signal: controller.signal,
      runId,
      runKey: req.runKey,
      trigger: req.trigger,
      ...(req.scheduledFor ? { scheduledFor: new Date(req.scheduledFor) } : {}),
      parameters,
      // Both inside runJob, so that a failing discovery or clean-up is recorded as this attempt's failure.
      client: async () => {
        lease = await deps.clients.acquire(resolved.connectionName, resolved.connection);
        return lease.client;
      },
      beforeStart: (client, attempt) => recoverDeadAttempts({ ...deps, logger: log }, client, resolved, req.runKey, attempt, runId).then(() => undefined),
      worker: deps.workerName,
    });
    return { status: result.status, runId: result.runId, rows: result.rows, pages: result.pages, bytes: result.bytes, durationMs: Math.round(result.durationMs) };
  } catch (err) {
    if (err instanceof RunFailedError) {
      if (controller.signal.aborted && deps.shuttingDown()) {
        // Recorded interrupted by runJob; back to the queue at once for another worker, without using up an attempt.
        log.warn({ runId: err.runId }, 'run interrupted by shutdown: queued again');
        await bjob.moveToDelayed(Date.now(), token);
        throw new DelayedError();
      }
      const text = `${err.code}: ${err.message} (run ${err.runId})`;
      throw err.retryable ? new Error(text, { cause: err }) : new UnrecoverableError(text);
    }
    if (err instanceof ConfigError) throw new UnrecoverableError(err.message);
    throw err;
  } finally {
    lease?.release();
    signal?.removeEventListener('abort', onBullAbort);
    untrack();
    await lock.release().catch((e: unknown) => log.warn({ err: coerceError(e).message }, 'could not release the overlap lock'));
  }
}

/** Default name of a worker in etl.runs.worker: `host:pid`. */
export function defaultWorkerName(): string {
  return `${hostname()}:${process.pid}`;
}
