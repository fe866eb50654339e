/**
 * The run worker: a BullMQ Worker calling {@link processRun}, with graceful shutdown: take no new runs, let
 * running ones finish for a grace period, then abort them.
 */
import { Worker } from 'bullmq';
import { coerceError } from '../errors.ts';
import { DEFAULT_QUEUE_PREFIX, ownerWorkerName, QUEUE_NAME } from './names.ts';
import { OVERLAP_LOCK_TTL_MS } from './overlap-lock.ts';
import type { QueuedRun } from './queue.ts';
import { makeReportClients } from '../report-api/client-registry.ts';
import { connectionAuthStore } from '../pipeline/auth-store.ts';
import { defaultWorkerName } from '../pipeline/run-attempt.ts';
import { ReportSlots } from '../report-api/report-slots.ts';
import { processRun, type ProcessDeps, type RunOutcome } from './run-processor.ts';
import { givenUpReason, recordStalledOut } from './given-up.ts';
import { noRunAlerts } from '../alerts/run-alerts.ts';

/** What {@link makeRunWorker} needs; `redis` is BullMQ's connection too (duplicated for its blocking reads). */
export interface RunWorkerDeps extends Pick<
  ProcessDeps,
  'config' | 'pool' | 'redis' | 'logger' | 'owner' | 'alerts' | 'invalidJobs'
> {
  /** Runs at the same time (default 1). */
  concurrency?: number;
  prefix?: string;
  /** BullMQ job lock in ms (default 30 000); a dead worker's run is stalled after it. */
  lockDurationMs?: number;
  /** Default 30 000 ms. */
  stalledIntervalMs?: number;
  /** Stalls before a run fails for good (default 2). */
  maxStalledCount?: number;
  /** Recheck interval under `overlap: wait`, in ms (default 5 000). */
  overlapRetryMs?: number;
  /** Default {@link OVERLAP_LOCK_TTL_MS}. */
  overlapLockTtlMs?: number;
  /** Name in etl.attempts.worker (default host:pid). */
  workerName?: string;
}

/** A running worker. */
export interface RunWorker {
  worker: Worker<QueuedRun, RunOutcome>;
  /**
   * Takes no new runs, waits up to `graceMs` for running ones, then aborts them (recorded interrupted, queued
   * again). The pool and Redis are the caller's. A second call waits for the first.
   */
  close(graceMs: number): Promise<void>;
  /** Aborts every running run now (a second signal). */
  abortAll(reason?: string): void;
}

/** Starts a worker on the run queue; it takes runs at once. */
export function makeRunWorker(deps: RunWorkerDeps): RunWorker {
  const prefix = deps.prefix ?? DEFAULT_QUEUE_PREFIX;
  const logger = deps.logger.child({ component: 'worker' });
  const slots = new ReportSlots(deps.redis, { prefix });
  const clients = makeReportClients(
    deps.redis,
    deps.logger,
    (name, connection) => connectionAuthStore(deps.pool, name, connection),
    `${prefix}:`,
  );
  const active = new Set<AbortController>();
  let shuttingDown = false;
  const processDeps = {
    ...deps,
    clients,
    slots,
    prefix,
    overlapRetryMs: deps.overlapRetryMs ?? 5_000,
    overlapLockTtlMs: deps.overlapLockTtlMs ?? OVERLAP_LOCK_TTL_MS,
    workerName: deps.workerName ?? defaultWorkerName(),
    shuttingDown: () => shuttingDown,
    track: (c: AbortController) => {
      active.add(c);
      return () => active.delete(c);
    },
  };
  const worker = new Worker<QueuedRun, RunOutcome>(
    QUEUE_NAME,
    // Three parameters: BullMQ passes an abort signal only to processors that declare it.
    (job, token, signal) => processRun(processDeps, job, token, signal),
    {
      connection: deps.redis,
      prefix,
      concurrency: deps.concurrency ?? 1,
      lockDuration: deps.lockDurationMs ?? 30_000,
      stalledInterval: deps.stalledIntervalMs ?? 30_000,
      maxStalledCount: deps.maxStalledCount ?? 2,
      // Names its owner session on each queue job it takes: the janitor hands the run of a dead one back at once.
      ...(deps.owner ? { name: ownerWorkerName(deps.owner.key) } : {}),
    },
  );
  worker.on('error', (err) => logger.error({ err: coerceError(err).message }, 'worker error'));
  void worker.waitUntilReady().then(
    () => logger.info({ concurrency: deps.concurrency ?? 1, prefix }, 'worker ready: taking runs'),
    () => undefined,
  );
  /** Records of runs the queue gave up, still being written: close() waits for them. */
  const recording = new Set<Promise<unknown>>();
  worker.on('failed', (job, err) => {
    logger.warn(
      { queueJobId: job?.id, job: job?.data.job, attemptsMade: job?.attemptsMade, err: err.message },
      'queued run attempt failed',
    );
    // BullMQ failed it without calling processRun (it stalled past maxStalledCount): nothing recorded its end yet.
    const reason = givenUpReason(job, err);
    if (!job || reason === undefined) return;
    const alerts = deps.alerts ?? noRunAlerts;
    const p = recordStalledOut({ ...processDeps, alerts }, job, reason).finally(() => recording.delete(p));
    recording.add(p);
  });
  worker.on('stalled', (jobId) =>
    logger.warn({ queueJobId: jobId }, 'run stalled (its worker died or lost the lock): queued again'),
  );
  const abortAll = (reason = 'shutdown') => {
    for (const c of active) c.abort(new Error(reason));
  };
  let closing: Promise<void> | undefined;
  return {
    worker,
    abortAll,
    close(graceMs) {
      closing ??= (async () => {
        shuttingDown = true;
        logger.info({ running: active.size, graceMs }, 'worker stopping: no new runs');
        const graceOver = setTimeout(() => {
          if (active.size === 0) return;
          logger.warn({ running: active.size }, 'grace period over: aborting running runs');
          abortAll('shutdown: grace period over');
        }, graceMs);
        await worker.close().finally(() => clearTimeout(graceOver));
        await Promise.all(recording);
        await clients.close();
        await slots.close();
        logger.info('worker stopped');
      })();
      return closing;
    },
  };
}
