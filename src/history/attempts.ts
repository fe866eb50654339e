/**
 * etl.attempts and etl.run_errors (docs/observability.md "Run history"), one function per statement. Each statement
 * that starts or ends an attempt updates its etl.runs row in the same statement ({@link endAttemptSql}).
 */
import type pg from 'pg';
import { withTransaction, type Queryable } from '../db.ts';
import { EtlError } from '../errors.ts';
import type { AttemptStatus, RunStage, RunTrigger } from '../vocabulary.ts';
import type { AttemptTimeline } from './timeline.ts';

/** What is known when an attempt starts. */
export interface AttemptStart {
  attemptId: string;
  job: string;
  runKey: string;
  scheduledFor?: Date | undefined;
  trigger: RunTrigger;
  targetTable: string;
  writeMode: string;
  /** `host:pid`. */
  worker: string;
  /** Kept on a run this attempt makes (a foreground run's). */
  logicalStart?: Date | undefined;
  logicalEnd?: Date | undefined;
  parameters?: Record<string, string> | undefined;
  /** The owner session's lock key (attempt-owner.ts). */
  ownerLock?: string | undefined;
  traceId?: string | undefined;
  /**
   * The interval the attempt stands for, ISO 8601, and with target.replaceRange the period it replaces, rendered
   * (etl.attempts.request, attempt-request.ts).
   */
  interval?:
    | {
        logicalStart: string;
        logicalEnd: string;
        tick: string;
        replaceRange?: { column: string; from: string; to: string } | undefined;
      }
    | undefined;
}

/**
 * Inserts the `running` attempt and counts it on its etl.runs row (made when missing), in one statement. The run
 * row's lock hands out each number once, also after stalls and replays, which BullMQ's counters skip.
 * @returns the attempt number, 1-based
 */
export async function insertAttempt(db: Queryable, a: AttemptStart): Promise<number> {
  const { rows } = await db.query<{ attempt: number }>(
    `WITH run AS (
       INSERT INTO etl.runs AS r (job, run_key, trigger, scheduled_for, attempts, status, first_started_at,
                                  logical_start, logical_end, parameters)
       VALUES ($2, $3, $5, $4, 1, 'running', now(), $10, $11, $12)
       ON CONFLICT (job, run_key) DO UPDATE
         SET attempts = r.attempts + 1, status = 'running', first_started_at = coalesce(r.first_started_at, now())
       RETURNING r.attempts)
     INSERT INTO etl.attempts (attempt_id, job, run_key, scheduled_for, trigger, attempt, status, target_table,
                               write_mode, worker, owner_lock, trace_id, request)
     SELECT $1, $2, $3, $4, $5, run.attempts, 'running', $6, $7, $8, $9::bigint, $13, $14::jsonb FROM run
     RETURNING attempt`,
    [
      a.attemptId,
      a.job,
      a.runKey,
      a.scheduledFor ?? null,
      a.trigger,
      a.targetTable,
      a.writeMode,
      a.worker,
      a.ownerLock ?? null,
      a.logicalStart ?? null,
      a.logicalEnd ?? null,
      a.parameters && Object.keys(a.parameters).length ? JSON.stringify(a.parameters) : null,
      a.traceId ?? null,
      a.interval ? JSON.stringify(a.interval) : null,
    ],
  );
  return rows[0]!.attempt;
}

/**
 * SQL: ends attempt $1, unless no longer `running`, with `set` and its end time `end` (an SQL expression; now unless
 * told), and folds it into its run. Status comes only from the run's newest attempt (an older one closed late does not
 * change it), rows from its first success.
 */
function endAttemptSql(set: string, end = 'clock_timestamp()'): string {
  return `WITH ended AS (
       UPDATE etl.attempts SET ${set}, finished_at = ${end},
              duration_ms = (extract(epoch FROM ${end} - started_at) * 1000)::bigint
        WHERE attempt_id = $1 AND status = 'running'
        RETURNING job, run_key, attempt, status, finished_at, rows)
     UPDATE etl.runs r
        SET status = CASE WHEN e.attempt = r.attempts THEN e.status ELSE r.status END,
            rows = CASE WHEN e.status = 'succeeded' THEN coalesce(r.rows, e.rows) ELSE r.rows END,
            last_finished_at = greatest(r.last_finished_at, e.finished_at)
       FROM ended e WHERE r.job = e.job AND r.run_key = e.run_key`;
}

/**
 * Stores the report job id as soon as it exists, open until {@link setReportJobDeleted}, so that a leftover can be
 * deleted later (docs/operations.md "No orphans (the janitor)").
 */
export async function setAttemptReportJob(db: Queryable, attemptId: string, reportJobId: string): Promise<void> {
  await db.query('UPDATE etl.attempts SET report_job_id = $2, report_job_open = true WHERE attempt_id = $1', [
    attemptId,
    reportJobId,
  ]);
}

/** Records that the attempt's report job was deleted on the server (or the server no longer knew it). */
export async function setReportJobDeleted(db: Queryable, attemptId: string): Promise<void> {
  await db.query('UPDATE etl.attempts SET report_job_open = false WHERE attempt_id = $1', [attemptId]);
}

/** An ended attempt whose report job was not deleted: its process died before the DELETE, or the DELETE failed. */
export interface OpenReportJob {
  attemptId: string;
  job: string;
  reportJobId: string;
  finishedAt: Date;
}

/**
 * The attempts of `jobs` that ended before `before` and left their report job open on the server, oldest first, at
 * most `limit`.
 */
export async function openReportJobsLeft(
  db: Queryable,
  jobs: readonly string[],
  before: Date,
  limit = 50,
): Promise<OpenReportJob[]> {
  const { rows } = await db.query<{ attempt_id: string; job: string; report_job_id: string; finished_at: Date }>(
    `SELECT attempt_id, job, report_job_id, finished_at FROM etl.attempts
      WHERE report_job_open AND status <> 'running' AND finished_at < $2 AND job = ANY($1::text[])
      ORDER BY finished_at LIMIT $3`,
    [jobs, before, limit],
  );
  return rows.map((r) => ({
    attemptId: r.attempt_id,
    job: r.job,
    reportJobId: r.report_job_id,
    finishedAt: r.finished_at,
  }));
}

/** Records that an attempt loads the kept pages of attempt `from` instead of asking the server. */
export async function setAttemptPagesFrom(db: Queryable, attemptId: string, from: string): Promise<void> {
  await db.query('UPDATE etl.attempts SET pages_from = $2 WHERE attempt_id = $1', [attemptId, from]);
}

/** Stores a succeeded attempt's timeline, unless it has one (a late write never replaces another). */
export async function setAttemptTimeline(db: Queryable, attemptId: string, timeline: AttemptTimeline): Promise<void> {
  await db.query('UPDATE etl.attempts SET timeline = $2 WHERE attempt_id = $1 AND timeline IS NULL', [
    attemptId,
    JSON.stringify(timeline),
  ]);
}

/** Figures of a load; bytes of page bodies as downloaded. */
export type LoadFigures = { rows: number; pages: number; bytes: number };

/**
 * Marks an attempt and its run succeeded, inside the loading transaction.
 * @returns false when the attempt is no longer `running` (a later attempt took the run over): it must not commit
 */
export async function completeAttempt(db: Queryable, attemptId: string, f: LoadFigures): Promise<boolean> {
  const { rowCount } = await db.query(
    endAttemptSql(`status = 'succeeded', rows = $2, pages = $3, bytes = $4, error = NULL`),
    [attemptId, f.rows, f.pages, f.bytes],
  );
  return (rowCount ?? 0) > 0;
}

/** What is recorded of a failure; `message` is ours, `serverMessage` and `problem` the server's, verbatim. */
export interface AttemptFailure {
  status: 'failed' | 'interrupted';
  stage: RunStage;
  errorKind: string;
  retryable: boolean;
  message: string;
  httpStatus?: number | undefined;
  serverMessage?: string | undefined;
  problem?: unknown;
  details?: Record<string, unknown> | undefined;
  figures?: Partial<LoadFigures>;
  timeline?: AttemptTimeline | undefined;
  /**
   * When the attempt's process was last known alive (an orphan's last progress): its end is recorded then, not when
   * its death was noticed, kept between its start and now (clocks of other hosts may differ). Default now.
   */
  lastAliveAt?: Date | undefined;
}

/** An attempt's text of a failure: ours, and the server's words when ours does not hold them. */
function errorText(f: AttemptFailure): string {
  return f.serverMessage && !f.message.includes(f.serverMessage) ? `${f.message}\n${f.serverMessage}` : f.message;
}

/**
 * Marks an attempt and its run failed (or interrupted) and writes its etl.run_errors row, in one transaction. An
 * attempt no longer `running` keeps its status; the error row is still written (a later word on a failure), and on a
 * failed or interrupted attempt its message becomes the attempt's text; unless `opts.onlyRunning`: then nothing is
 * written (an orphan whose process committed it as it died).
 * @returns whether this call ended the attempt
 */
export async function failAttempt(
  pool: pg.Pool,
  attemptId: string,
  f: AttemptFailure,
  opts: { onlyRunning?: boolean } = {},
): Promise<boolean> {
  return withTransaction(pool, async (tx) => {
    const { rowCount } = await tx.query(
      endAttemptSql(
        'status = $2, error = $3, rows = $4, pages = $5, bytes = $6, timeline = coalesce($7, timeline)',
        'least(clock_timestamp(), greatest(started_at, coalesce($8::timestamptz, clock_timestamp())))',
      ),
      [
        attemptId,
        f.status,
        errorText(f),
        f.figures?.rows ?? null,
        f.figures?.pages ?? null,
        f.figures?.bytes ?? null,
        f.timeline ? JSON.stringify(f.timeline) : null,
        f.lastAliveAt ?? null,
      ],
    );
    const ended = (rowCount ?? 0) > 0;
    if (!ended && opts.onlyRunning) return false;
    if (!ended)
      await tx.query(
        `UPDATE etl.attempts SET error = $2 WHERE attempt_id = $1 AND status IN ('failed', 'interrupted')`,
        [attemptId, errorText(f)],
      );
    await tx.query(
      `INSERT INTO etl.run_errors (attempt_id, stage, error_kind, retryable, http_status, message, server_message,
                                   problem, details)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [
        attemptId,
        f.stage,
        f.errorKind,
        f.retryable,
        f.httpStatus ?? null,
        f.message,
        f.serverMessage ?? null,
        f.problem === undefined ? null : JSON.stringify(f.problem),
        f.details === undefined ? null : JSON.stringify(f.details),
      ],
    );
    return ended;
  });
}

/** The first etl.run_errors row of an attempt (what ended it), or undefined when it has none. */
export async function firstAttemptError(
  db: Queryable,
  attemptId: string,
): Promise<{ error_kind: string; message: string } | undefined> {
  const { rows } = await db.query<{ error_kind: string; message: string }>(
    'SELECT error_kind, message FROM etl.run_errors WHERE attempt_id = $1 ORDER BY id LIMIT 1',
    [attemptId],
  );
  return rows[0];
}

/** Turns any error into the failure record of an attempt; a pg error's code becomes `PG_<code>`. */
export function failureOf(err: Error, fallbackStage: RunStage, figures?: Partial<LoadFigures>): AttemptFailure {
  const e = err instanceof EtlError ? err : undefined;
  const pgCode = (err as { code?: unknown }).code;
  return {
    status: e?.code === 'ABORTED' ? 'interrupted' : 'failed',
    stage: e?.stage ?? fallbackStage,
    errorKind: e?.code ?? (pgCode ? `PG_${String(pgCode)}` : 'INTERNAL'),
    retryable: e?.retryable ?? false,
    message: err.message,
    httpStatus: e?.httpStatus,
    serverMessage: e?.serverMessage,
    problem: e?.problem,
    details: e?.details,
    figures,
  };
}

/** One etl.attempts row (docs/observability.md "Run history"); bigints as text. */
export interface AttemptRow {
  attempt_id: string;
  job: string;
  run_key: string;
  scheduled_for: Date | null;
  trigger: RunTrigger;
  attempt: number;
  status: AttemptStatus;
  report_job_id: string | null;
  /** The report job was started and not deleted yet (a leftover the janitor deletes once the attempt ended). */
  report_job_open: boolean;
  target_table: string;
  write_mode: string;
  rows: string | null;
  pages: number | null;
  bytes: string | null;
  started_at: Date;
  finished_at: Date | null;
  duration_ms: string | null;
  error: string | null;
  worker: string | null;
  /** The owner session's lock key (attempt-owner.ts); null for an attempt recorded without one. */
  owner_lock: string | null;
  accepted_guard: string | null;
  /** The attempt whose kept pages it loaded (`replay --from-pages`); null: from the server. */
  pages_from: string | null;
  trace_id: string | null;
  /** What it asked the server for: read with attempt-request.ts `readAttemptRequest`; null before migration 0020. */
  request: unknown;
  /** Read with timeline.ts `readTimeline`; null until the attempt ended. */
  timeline: unknown;
  /** How far its reading got: read with attempt-progress.ts `readProgress`; null before its first page. */
  progress: unknown;
}

/** Records, in the load transaction, the guard's `words` the attempt loaded past (`replay --accept-guard`). */
export async function recordAcceptedGuard(db: Queryable, attemptId: string, words: string): Promise<void> {
  await db.query('UPDATE etl.attempts SET accepted_guard = $2 WHERE attempt_id = $1', [attemptId, words]);
}

/**
 * Adds `words` to the guard's words an attempt loaded past (`replay --accept-guard`), in the load transaction; nothing
 * for an attempt that accepted no guard.
 */
export async function addToAcceptedGuard(db: Queryable, attemptId: string, words: string): Promise<void> {
  await db.query(
    `UPDATE etl.attempts SET accepted_guard = accepted_guard || '; ' || $2
      WHERE attempt_id = $1 AND accepted_guard IS NOT NULL`,
    [attemptId, words],
  );
}

/** Reads one attempt by id, or undefined. */
export async function getAttempt(db: Queryable, attemptId: string): Promise<AttemptRow | undefined> {
  const { rows } = await db.query<AttemptRow>('SELECT * FROM etl.attempts WHERE attempt_id = $1', [attemptId]);
  return rows[0];
}

/** The newest attempt of a logical run, or undefined before its first. */
export async function newestAttempt(db: Queryable, job: string, runKey: string): Promise<AttemptRow | undefined> {
  const { rows } = await db.query<AttemptRow>(
    'SELECT * FROM etl.attempts WHERE job = $1 AND run_key = $2 ORDER BY attempt DESC, started_at DESC LIMIT 1',
    [job, runKey],
  );
  return rows[0];
}

/** An attempt still recorded `running`. */
export type RunningAttempt = Pick<AttemptRow, 'attempt_id' | 'attempt' | 'report_job_id' | 'worker' | 'owner_lock'> & {
  progress?: unknown;
};

/** Attempts of a logical run still recorded `running` (alive, or left by a dead worker), oldest first. */
export async function runningAttempts(db: Queryable, job: string, runKey: string): Promise<RunningAttempt[]> {
  const { rows } = await db.query<RunningAttempt>(
    `SELECT attempt_id, attempt, report_job_id, worker, owner_lock::text AS owner_lock, progress
       FROM etl.attempts WHERE job = $1 AND run_key = $2 AND status = 'running' ORDER BY started_at`,
    [job, runKey],
  );
  return rows;
}

/** Whether an attempt of the logical run succeeded and was not reverted since (etl.reverts). */
export async function hasSucceeded(db: Queryable, job: string, runKey: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `SELECT 1 FROM etl.attempts a WHERE a.job = $1 AND a.run_key = $2 AND a.status = 'succeeded'
        AND a.attempt > coalesce(
          (SELECT max(v.after_attempt) FROM etl.reverts v WHERE v.job = $1 AND v.run_key = $2), 0)
      LIMIT 1`,
    [job, runKey],
  );
  return (rowCount ?? 0) > 0;
}

/** The newest tick a scheduled or caught-up attempt of `job` was recorded for, or undefined. */
export async function lastScheduledTick(db: Queryable, job: string): Promise<Date | undefined> {
  const { rows } = await db.query<{ t: Date | null }>(
    `SELECT max(scheduled_for) AS t FROM etl.attempts
      WHERE job = $1 AND trigger IN ('schedule', 'catchup') AND scheduled_for IS NOT NULL`,
    [job],
  );
  return rows[0]?.t ?? undefined;
}
