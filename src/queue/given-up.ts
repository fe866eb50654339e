/**
 * Runs that end without an attempt of their own failing (docs/operations.md "No orphans (the janitor)" and "Redis in
 * production"): a queued run whose queue job vanished before a worker began it (QUEUE_JOB_LOST, the janitor's), and
 * a run the queue gave up because its worker died or froze too often (RUN_STALLED: BullMQ fails such a queue job
 * without calling the processor). Each is recorded failed in an attempt of its own, not retried, and alerted.
 */
import type pg from 'pg';
import type { Job } from 'bullmq';
import { randomUUID } from 'node:crypto';
import type { RunAlerts } from '../alerts/run-alerts.ts';
import { resolveJob } from '../config/load.ts';
import { jobOfSubject } from '../config/mandants.ts';
import type { EtlConfig } from '../config/schema.ts';
import { coerceError, EtlError } from '../errors.ts';
import { failAttempt, failureOf, hasSucceeded, insertAttempt } from '../history/attempts.ts';
import { orphanedAttemptsOf } from '../history/orphans.ts';
import type { Logger } from '../logger.ts';
import { attemptInterval, logicalTimeOf } from '../pipeline/logical-time.ts';
import { shellQuote } from '../shell-quote.ts';
import type { RunTrigger } from '../vocabulary.ts';
import { parseTableName } from '../warehouse/identifiers.ts';
import type { QueuedRun } from './queue.ts';

/** The run a failure without an attempt of its own belongs to. */
export interface UnrunFailure {
  job: string;
  runKey: string;
  trigger: RunTrigger;
  scheduledFor?: Date | undefined;
  /** The interval the run was asked for, when it was given one (a backfill's, a manual run's `--from`/`--to`). */
  logicalStart?: Date | undefined;
  logicalEnd?: Date | undefined;
  /** When the run was queued: a manual run without an interval stands for the one before this time. */
  queuedAt?: Date | undefined;
  /** The failure, not retryable, at stage `start`. */
  error: EtlError;
  /** Name in etl.attempts.worker: the process that records it. */
  worker: string;
}

/**
 * Records `f` as an attempt of its run `failed` at once (the run's newest, so the run reads failed and `replay
 * --failed` finds it), with the interval its run stands for and with target.replaceRange its period (as an attempt
 * of it would have computed them, in etl.attempts.request; it sent no report request), and sends the failed alert.
 * @returns the attempt's id
 * @throws EtlError CONFIG_INVALID for a job gone from `config` (nothing recorded); the database's error
 */
export async function recordUnrunFailure(
  pool: pg.Pool,
  config: EtlConfig,
  alerts: RunAlerts,
  f: UnrunFailure,
): Promise<string> {
  const job = jobOfSubject(config, f.job);
  if (!job)
    throw new EtlError('CONFIG_INVALID', `job "${f.job}" is not in jobs.yaml any more: its failure is not recorded`);
  const target = parseTableName(job.target.table);
  const attemptId = randomUUID();
  const asked = {
    scheduledFor: f.scheduledFor?.toISOString(),
    logicalStart: f.logicalStart?.toISOString(),
    logicalEnd: f.logicalEnd?.toISOString(),
  };
  const resolved = resolveJob(config, f.job);
  const time = logicalTimeOf(resolved, asked, f.queuedAt ?? new Date());
  await insertAttempt(pool, {
    attemptId,
    job: f.job,
    runKey: f.runKey,
    scheduledFor: f.scheduledFor,
    trigger: f.trigger,
    targetTable: `${target.schema}.${target.table}`,
    writeMode: job.target.mode,
    worker: f.worker,
    // With target.replaceRange its period: a later success of the same period supersedes this failure.
    interval: attemptInterval(resolved, time),
  });
  await failAttempt(pool, attemptId, failureOf(f.error, 'start'));
  await alerts.failed({ job: f.job, runKey: f.runKey, attemptId, trigger: f.trigger, error: f.error });
  return attemptId;
}

/** The failed reason BullMQ gives a queue job it failed without a worker running it, or undefined for another. */
export function givenUpReason(queueJob: Job<QueuedRun> | undefined, err: Error): string | undefined {
  // BullMQ fails a job that stalled past maxStalledCount when a worker next takes it, with this reason.
  return queueJob?.deferredFailure && err.message === queueJob.deferredFailure ? err.message : undefined;
}

/** What {@link recordStalledOut} needs. */
export interface StalledOutDeps {
  pool: pg.Pool;
  config: () => EtlConfig;
  alerts: RunAlerts;
  logger: Logger;
  /** Name in etl.attempts.worker. */
  workerName: string;
}

/**
 * Records failed with RUN_STALLED the run of a queue job BullMQ gave up because its worker died or froze more often
 * than `maxStalledCount` allows (`reason`, BullMQ's words), and alerts it. A run that succeeded after all (a frozen
 * worker committed before its lock ran out) is left as it is. Never throws: a failure to record is logged.
 * @returns the attempt recorded, or undefined when none was
 */
export async function recordStalledOut(
  deps: StalledOutDeps,
  queueJob: Job<QueuedRun>,
  reason: string,
): Promise<string | undefined> {
  const { job, runKey, trigger } = queueJob.data;
  const log = deps.logger.child({ job, runKey, queueJobId: queueJob.id });
  try {
    if (await hasSucceeded(deps.pool, job, runKey)) {
      log.info(`the queue gave this run up (${reason}), but an attempt of it had committed: nothing to record`);
      return undefined;
    }
    const { orphaned, attempts } = await orphanedAttemptsOf(deps.pool, job, runKey);
    const error = new EtlError(
      'RUN_STALLED',
      `the queue gave this run up (queue job ${queueJob.id}: ${reason}): its worker died or froze (kill -9, out of ` +
        `memory, a process stopped past its lock) more often than BullMQ's maxStalledCount allows; ${orphaned} of ` +
        `its ${attempts} attempts before were orphaned (each says where it stopped); nothing was committed and it ` +
        `is not tried again: find out why its workers die, then ` +
        `report-etl replay ${shellQuote(runKey)} --job ${shellQuote(job)}`,
      { retryable: false, stage: 'start', details: { queueJobId: queueJob.id, reason, orphaned, attempts } },
    );
    const at = (iso: string | undefined) => (iso ? new Date(iso) : undefined);
    const { data } = queueJob;
    const attemptId = await recordUnrunFailure(deps.pool, deps.config(), deps.alerts, {
      job,
      runKey,
      trigger,
      scheduledFor: at(data.scheduledFor),
      logicalStart: at(data.logicalStart),
      logicalEnd: at(data.logicalEnd),
      queuedAt: new Date(queueJob.timestamp),
      error,
      worker: deps.workerName,
    });
    log.error({ attemptId }, error.message);
    return attemptId;
  } catch (err) {
    log.error({ err: coerceError(err).message, reason }, 'the queue gave this run up, and recording that failed');
    return undefined;
  }
}
