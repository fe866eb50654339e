/**
 * The words of one attempt (docs/architecture.md "Vocabulary": a run is the logical run, named by its run key; an
 * attempt is one try of it): what the caller gives {@link AttemptOptions}, what the steps share while it runs
 * ({@link Attempt}), and how it ends ({@link AttemptResult}, {@link AttemptFailedError}).
 */
import { hostname } from 'node:os';
import type pg from 'pg';
import type { Redis } from 'ioredis';
import type { ResolvedJob } from '../config/load.ts';
import { EtlError } from '../errors.ts';
import type { AttemptOwner } from '../history/attempt-owner.ts';
import type { Logger } from '../logger.ts';
import type { ReportClients } from '../report-api/index.ts';
import type { ReportSlots } from '../report-api/report-slots.ts';
import type { RunRequest, RunStage } from '../vocabulary.ts';
import type { CopyFormatUsed } from '../warehouse/copy-load.ts';
import type { LoadPlan } from '../warehouse/load-plan.ts';
import type { TableName } from '../warehouse/identifiers.ts';
import type { Context } from '../tracing.ts';
import type { AttemptTrace } from './attempt-trace.ts';
import type { LogicalTime } from './logical-time.ts';

/** Options of runAttempt. */
export interface AttemptOptions {
  /** The jobs.yaml job, resolved once by the caller (config `resolveJob`). */
  job: ResolvedJob;
  /** Trigger, run key, logical time, parameters. Default: a manual run of its own (run key = attempt id), now. */
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
   * The job's overlap lock, held by the caller (docs/architecture.md "Liveness"). With it, attempts of this run still
   * `running` whose owner is gone are cleared first, the attempt stops at once when the lock is found lost, and the
   * lock is confirmed before the commit.
   */
  exclusive?: ExclusiveLock;
  /** The installation's prefix: the attempt's own report client keeps its access token under it. */
  prefix?: string | undefined;
  /** Name of the process in the attempt's `worker` column (default host:pid). */
  worker?: string;
  /** The process's owner session (history/attempt-owner.ts), recorded so that the janitor can close a dead attempt. */
  owner?: AttemptOwner | undefined;
  /** Called once the report job is started and its id recorded (`report-etl run` starts its janitor work here). */
  onReportJobStarted?: () => void;
  /** The fleet's report slots (docs/architecture.md "A fleet"); without them no limit applies. */
  slots?: ReportSlots | undefined;
  /** The trace context the attempt's span continues (a queued run's); default the active one. */
  traceParent?: Context | undefined;
}

/** A lock that makes the caller the only runner of a job (the queue's overlap lock). */
export interface ExclusiveLock {
  /**
   * Checks, now, that the lock is still held (and extends it).
   * @returns false when it was lost or cannot be confirmed (its store unreachable)
   */
  confirm(): Promise<boolean>;
  /**
   * Aborts, with an {@link OverlapLockLost} reason, once the lock is found lost (another holder, or no key): joined
   * with the signal of the recorded attempt's steps, so that the attempt stops at once, as an abort stops it, and
   * fails with {@link OverlapLockLostError} at the stage it was at (lost during the slot wait: at its first step). A
   * store that merely cannot be asked does not abort it.
   */
  readonly lost?: AbortSignal;
}

/** The reason an attempt's signal carries when its {@link ExclusiveLock} was found lost. */
export class OverlapLockLost extends Error {
  constructor() {
    super('the overlap lock of this job was lost');
    this.name = 'OverlapLockLost';
  }
}

/**
 * OVERLAP_LOCK_LOST, retryable: the attempt's {@link ExclusiveLock} was lost, found so by its renewal while the attempt
 * ran or by its confirmation before the commit (docs/architecture.md "Liveness"). Nothing was committed.
 */
export class OverlapLockLostError extends EtlError {
  /** @param stage where the attempt was; default the trace's (recordFailedAttempt sets it) */
  constructor(stage?: RunStage) {
    super(
      'OVERLAP_LOCK_LOST',
      'the overlap lock of this job was lost during the attempt (Redis lost its key, or the process stalled past ' +
        'the lock and another worker took the run over): its rows are not committed; the run is retried while it ' +
        'has attempts left',
      { stage },
    );
  }
}

/**
 * One attempt once recorded, as its steps (attempt-steps.ts) share it; what changes as it runs is in its trace (the
 * stage) and in what the steps return.
 */
export interface Attempt {
  readonly options: AttemptOptions;
  /** The attempt's id, a UUID. */
  readonly attemptId: string;
  readonly runKey: string;
  /** 1-based number of the attempt within its run. */
  readonly number: number;
  /** The target table, parsed, and as `schema.table`. */
  readonly target: TableName;
  readonly targetTable: string;
  /** Wall clock at the start (document file names); `performance.now()` at the start (durations). */
  readonly startedAt: Date;
  readonly startedMs: number;
  /** `performance.now()` when maxRunMs passes (deadlines.ts), which the load transaction's timeouts follow. */
  readonly deadline: number | undefined;
  /** The attempt's logger: `{ job, attemptId }`. */
  readonly log: Logger;
  /** The run's logical time, worked out once from the request (a manual run's "now" is the attempt's start). */
  readonly logicalTime: LogicalTime;
  /** Where the attempt's time goes, and the stage it is at (attempt-trace.ts). */
  readonly trace: AttemptTrace;
}

/** Outcome of a successful attempt. */
export interface AttemptResult {
  /** The attempt's id. */
  attemptId: string;
  /** jobs.yaml job name. */
  job: string;
  runKey: string;
  /** 1-based number of the attempt within its run. */
  attempt: number;
  /** already-loaded: an append whose run was already appended by another attempt; nothing was added. */
  status: 'succeeded' | 'already-loaded';
  plan: LoadPlan | 'none';
  /** The COPY format the rows were loaded in (binary for typed columns of an existing target). */
  format?: CopyFormatUsed;
  rows: number;
  pages: number;
  bytes: number;
  /** Wall time of the attempt, ms. */
  durationMs: number;
  reportJobId?: string;
  /**
   * Set when no target exists after the run: the report had no rows and no columns, so none was created
   * (warehouse/guard.ts noTargetWords).
   */
  noTarget?: string;
}

/** An attempt that failed; recorded in the run history before this is thrown. `error` is the typed cause. */
export class AttemptFailedError extends Error {
  /** The failed attempt's id. */
  readonly attemptId: string;
  readonly error: Error;
  readonly code: string;
  readonly retryable: boolean;
  /**
   * The error kind with which another process had closed the attempt before it failed here (ORPHANED: the janitor
   * took it for dead after its owner session was lost; ABORTED: a later attempt of its run): its failure here is a
   * consequence (its report job was deleted), recorded by that process, and not the run's.
   */
  readonly closedElsewhere: string | undefined;
  constructor(attemptId: string, error: Error, closedElsewhere?: string) {
    super(error.message, { cause: error });
    this.name = 'AttemptFailedError';
    this.attemptId = attemptId;
    this.error = error;
    this.code = error instanceof EtlError ? error.code : 'INTERNAL';
    this.retryable = error instanceof EtlError ? error.retryable : false;
    this.closedElsewhere = closedElsewhere;
  }
}

/** Default name of a process in the attempt's `worker` column: `host:pid`. */
export function defaultWorkerName(): string {
  return `${hostname()}:${process.pid}`;
}
