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
import type { CopyFormatUsed, LoadPlan } from '../warehouse/copy-load.ts';
import type { TableName } from '../warehouse/identifiers.ts';
import type { Context } from '../tracing.ts';
import type { AttemptTrace } from './attempt-trace.ts';
import type { LogicalTime } from './logical-time.ts';

/** Options of runAttempt. */
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
   * The job's overlap lock, held by the caller (one run of the job at a time, across processes;
   * docs/architecture.md "Liveness"). With it, attempts of this run still recorded `running` whose owner is gone
   * (or unknown) are dead: their report jobs are deleted and they are recorded `interrupted` first. Before the
   * commit the lock must still be confirmed: an attempt whose lock was lost meanwhile (Redis emptied, a stall past
   * the lock's TTL) does not commit.
   */
  exclusive?: ExclusiveLock;
  /** The installation's prefix (the queue prefix): the attempt's own report client keeps its access token under it (default `report-etl`). */
  prefix?: string | undefined;
  /** Name of the process in the attempt's `worker` column (default host:pid). */
  worker?: string;
  /**
   * The process's owner session (history/attempt-owner.ts): recorded with the attempt so that the janitor can close
   * it and delete its report job when the process dies. Without it, only a later attempt of the same run can.
   */
  owner?: AttemptOwner | undefined;
  /**
   * Called once, as soon as the report job is started and its id recorded, while the server renders the report
   * (`report-etl run` starts its janitor work here). Not called when the attempt ends before it starts a report job.
   */
  onReportJobStarted?: () => void;
  /**
   * The fleet's report slots (docs/architecture.md "A fleet"): with them, the attempt first waits for a slot on its
   * connection (`maxConcurrentReports`), before it is recorded and without a PostgreSQL connection, and holds it
   * until its report job is deleted. Without them (tests, tools), no limit applies.
   */
  slots?: ReportSlots | undefined;
  /**
   * The trace context the attempt's span continues (a queued run's span, docs/observability.md "Tracing"); default the
   * active one (a foreground run's attempt starts its own trace). Nothing is traced unless the process registered the
   * SDK.
   */
  traceParent?: Context | undefined;
}

/** A lock that makes the caller the only runner of a job (the queue's overlap lock). */
export interface ExclusiveLock {
  /**
   * Checks, now, that the lock is still held (and extends it).
   * @returns false when it was lost or cannot be confirmed (its store unreachable)
   */
  confirm(): Promise<boolean>;
}

/**
 * One attempt while it runs, shared by its steps (attempt-steps.ts). `stage` is where a failure is recorded: each
 * step sets it once, as it begins; the figures grow while pages are read.
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
  stage: RunStage;
  /** The attempt's logger: `{ job, attemptId }`, and `reportJobId` once there is one. */
  log: Logger;
  /** The report job, once started. */
  reportJobId: string | undefined;
  /** The run's logical time, worked out once from the request (a manual run's "now" is the attempt's start). */
  readonly logicalTime: LogicalTime;
  /** Pages read completely, and bytes of page bodies downloaded, so far. */
  pages: number;
  bytes: number;
  /** Where the attempt's time goes: its timeline and spans (attempt-trace.ts). */
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
}

/** An attempt that failed; recorded in the run history before this is thrown. `error` is the typed cause. */
export class AttemptFailedError extends Error {
  /** The failed attempt's id. */
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

/** Default name of a process in the attempt's `worker` column: `host:pid`. */
export function defaultWorkerName(): string {
  return `${hostname()}:${process.pid}`;
}
