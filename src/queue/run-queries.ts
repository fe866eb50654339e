/**
 * The SQL the queue needs on the run history (CONVENTIONS.md: each SQL operation one small typed function):
 * catch-up, stalled-attempt recovery, exactly-once per tick, `runs` and `replay --failed`.
 * Tables: etl.runs (migrations/0001), etl.run_requests (migrations/0002).
 */
import type { Queryable, RunRow } from '../warehouse/run-history.ts';
import type { RunTrigger } from '../vocabulary.ts';

/** What a logical run was asked to do; one row per (job, run_key). */
export interface RunRequestRow {
  job: string;
  runKey: string;
  queueJobId: string;
  trigger: RunTrigger;
  scheduledFor?: Date | undefined;
  logicalStart?: Date | undefined;
  logicalEnd?: Date | undefined;
  parameters?: Record<string, string> | undefined;
}

/** Stores the request of a logical run unless it is stored already (the first attempt's request wins). */
export async function recordRunRequest(db: Queryable, r: RunRequestRow): Promise<void> {
  await db.query(
    `INSERT INTO etl.run_requests (job, run_key, queue_job_id, trigger, scheduled_for, logical_start, logical_end, parameters)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (job, run_key) DO NOTHING`,
    [r.job, r.runKey, r.queueJobId, r.trigger, r.scheduledFor ?? null, r.logicalStart ?? null, r.logicalEnd ?? null, r.parameters ? JSON.stringify(r.parameters) : null],
  );
}

/** Reads the request of a logical run, or undefined (runs made by `run` in the foreground have none). */
export async function getRunRequest(db: Queryable, job: string, runKey: string): Promise<RunRequestRow | undefined> {
  const { rows } = await db.query<{
    queue_job_id: string;
    trigger: RunTrigger;
    scheduled_for: Date | null;
    logical_start: Date | null;
    logical_end: Date | null;
    parameters: Record<string, string> | null;
  }>('SELECT * FROM etl.run_requests WHERE job = $1 AND run_key = $2', [job, runKey]);
  const r = rows[0];
  if (!r) return undefined;
  return {
    job,
    runKey,
    queueJobId: r.queue_job_id,
    trigger: r.trigger,
    scheduledFor: r.scheduled_for ?? undefined,
    logicalStart: r.logical_start ?? undefined,
    logicalEnd: r.logical_end ?? undefined,
    parameters: r.parameters ?? undefined,
  };
}

/** The newest tick a scheduled or caught-up run of `job` was recorded for (any status), or undefined. */
export async function lastScheduledTick(db: Queryable, job: string): Promise<Date | undefined> {
  const { rows } = await db.query<{ t: Date | null }>(
    `SELECT max(scheduled_for) AS t FROM etl.runs WHERE job = $1 AND trigger IN ('schedule', 'catchup') AND scheduled_for IS NOT NULL`,
    [job],
  );
  return rows[0]?.t ?? undefined;
}

/** An attempt recorded `running`. */
export interface DeadAttempt {
  run_id: string;
  attempt: number;
  report_job_id: string | null;
  worker: string | null;
}

/** Attempts of a logical run still recorded `running`: left behind by a worker that died (kill -9, lost lock). */
export async function runningAttempts(db: Queryable, job: string, runKey: string): Promise<DeadAttempt[]> {
  const { rows } = await db.query<DeadAttempt>(
    `SELECT run_id, attempt, report_job_id, worker FROM etl.runs WHERE job = $1 AND run_key = $2 AND status = 'running' ORDER BY started_at`,
    [job, runKey],
  );
  return rows;
}

/**
 * The number of the next attempt of a logical run: one more than the attempts etl.runs holds for it, so that
 * attempts after a stall, a shutdown or a replay keep counting (BullMQ's own counters skip stalls and restarts).
 */
export async function nextAttempt(db: Queryable, job: string, runKey: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT coalesce(max(attempt), 0)::int + 1 AS n FROM etl.runs WHERE job = $1 AND run_key = $2`, [job, runKey]);
  return rows[0]!.n;
}

/** Whether some attempt of the logical run succeeded. */
export async function hasSucceeded(db: Queryable, job: string, runKey: string): Promise<boolean> {
  const { rowCount } = await db.query(`SELECT 1 FROM etl.runs WHERE job = $1 AND run_key = $2 AND status = 'succeeded' LIMIT 1`, [job, runKey]);
  return (rowCount ?? 0) > 0;
}

/** Filter of {@link listRuns}. */
export interface RunFilter {
  job?: string | undefined;
  status?: string | undefined;
  /** Runs started at or after this instant. */
  since?: Date | undefined;
  /** Most rows (default 100). */
  limit?: number | undefined;
}

/** A run as `report-etl runs` shows it: the etl.runs row and the first line of its error. */
export interface RunListRow extends RunRow {
  worker: string | null;
  error_first_line: string | null;
}

/** Runs, newest first. */
export async function listRuns(db: Queryable, f: RunFilter = {}): Promise<RunListRow[]> {
  const { rows } = await db.query<RunListRow>(
    `SELECT r.*, split_part(r.error, E'\\n', 1) AS error_first_line
       FROM etl.runs r
      WHERE ($1::text IS NULL OR r.job = $1) AND ($2::text IS NULL OR r.status = $2) AND ($3::timestamptz IS NULL OR r.started_at >= $3)
      ORDER BY r.started_at DESC
      LIMIT $4`,
    [f.job ?? null, f.status ?? null, f.since ?? null, f.limit ?? 100],
  );
  return rows;
}

/**
 * Logical runs whose newest attempt failed and that never succeeded: what `replay --failed` re-queues.
 * @returns the newest failed attempt of each such run, newest first
 */
export async function failedRunsToReplay(db: Queryable, f: { job?: string | undefined; since?: Date | undefined } = {}): Promise<Pick<RunRow, 'run_id' | 'job' | 'run_key'>[]> {
  const { rows } = await db.query<Pick<RunRow, 'run_id' | 'job' | 'run_key'>>(
    `SELECT run_id, job, run_key FROM (
       SELECT DISTINCT ON (job, run_key) run_id, job, run_key, status, started_at
         FROM etl.runs
        WHERE ($1::text IS NULL OR job = $1) AND ($2::timestamptz IS NULL OR started_at >= $2)
        ORDER BY job, run_key, started_at DESC
     ) newest
     WHERE status = 'failed'
       AND NOT EXISTS (SELECT 1 FROM etl.runs s WHERE s.job = newest.job AND s.run_key = newest.run_key AND s.status = 'succeeded')
     ORDER BY started_at DESC`,
    [f.job ?? null, f.since ?? null],
  );
  return rows;
}
