/**
 * Reading the run history (README "Run history": etl.runs, etl.run_errors) for `report-etl runs`, `replay
 * --failed` and the admin pages, one small typed function per query (docs/architecture.md "Layers").
 */
import type { Queryable } from '../db.ts';
import type { AttemptStatus } from '../vocabulary.ts';
import type { AttemptRow } from './attempts.ts';

/**
 * SQL expression: the first non-blank line of the server's own message of attempt `r` (its last error that has
 * one), else the first line of our error text (`etl.runs.error`), which starts with our own prefix.
 */
export const FIRST_ERROR_LINE = `coalesce((SELECT substring(e.server_message, '[^\\n]*\\S[^\\n]*') FROM etl.run_errors e
    WHERE e.run_id = r.run_id AND e.server_message IS NOT NULL ORDER BY e.id DESC LIMIT 1), nullif(split_part(r.error, E'\\n', 1), ''))`;

/** One attempt in a run list: the etl.runs row plus the first line of its error (the server's words first, see {@link FIRST_ERROR_LINE}). */
export interface RunListRow extends AttemptRow {
  error_first_line: string | null;
}

/** Filter of {@link listRuns}. */
export interface RunFilter {
  job?: string | undefined;
  status?: string | undefined;
  /** Attempts started at or after this instant. */
  since?: Date | undefined;
  /** Most rows (default 100). */
  limit?: number | undefined;
}

/**
 * Whether the run history exists in this database (`etl.runs`, made by the migrations). Read-only callers ask
 * first instead of migrating: a database never migrated simply has no runs yet.
 */
export async function hasRunHistory(db: Queryable): Promise<boolean> {
  const { rows } = await db.query<{ t: string | null }>(`SELECT to_regclass('etl.runs')::text AS t`);
  return rows[0]?.t != null;
}

/** Attempts, newest first (`report-etl runs`). */
export async function listRuns(db: Queryable, f: RunFilter = {}): Promise<RunListRow[]> {
  const { rows } = await db.query<RunListRow>(
    `SELECT r.*, ${FIRST_ERROR_LINE} AS error_first_line
       FROM etl.runs r
      WHERE ($1::text IS NULL OR r.job = $1) AND ($2::text IS NULL OR r.status = $2) AND ($3::timestamptz IS NULL OR r.started_at >= $3)
      ORDER BY r.started_at DESC
      LIMIT $4`,
    [f.job ?? null, f.status ?? null, f.since ?? null, f.limit ?? 100],
  );
  return rows;
}

/** Write modes whose target holds the latest state, so that an older logical run's rows would overwrite newer ones. */
export const STATE_WRITE_MODES: readonly string[] = ['replace', 'merge'];

/**
 * The logical time of the logical run of attempt alias `r` (SQL): its `etl.run_requests.logical_end` (the tick, or
 * when a manual run was asked for), else the tick in `etl.runs.scheduled_for`, else when its first attempt started
 * (a foreground `report-etl run`, which records no request).
 */
function logicalTimeSql(r: string): string {
  return `COALESCE(
    (SELECT q.logical_end FROM etl.run_requests q WHERE q.job = ${r}.job AND q.run_key = ${r}.run_key),
    ${r}.scheduled_for,
    (SELECT min(a.started_at) FROM etl.runs a WHERE a.job = ${r}.job AND a.run_key = ${r}.run_key))`;
}

/** A failed logical run `replay --failed` considers: its newest attempt, and the run that supersedes it, if any. */
export interface FailedRunToReplay {
  /** The newest failed attempt (etl.runs.run_id). */
  run_id: string;
  job: string;
  run_key: string;
  /** When that attempt started. */
  started_at: Date;
  /** First line of its error. */
  error_first_line: string | null;
  write_mode: string;
  target_table: string;
  /** The run's logical time (see {@link failedRunsToReplay}). */
  logical_time: Date;
  /** The newest succeeded attempt of a later logical run that supersedes this one, or null. */
  superseded_by_run_id: string | null;
  /** Its run key, or null. */
  superseded_by_run_key: string | null;
}

/**
 * Logical runs whose newest attempt failed and that never succeeded: what `replay --failed` considers, each with
 * the run that supersedes it.
 *
 * A failed logical run is **superseded** when its attempt wrote in write mode `replace` or `merge` and another
 * logical run of the same job, into the same target table, succeeded and has a later logical time. The logical
 * time of a run is its `etl.run_requests.logical_end` (the tick of a scheduled, caught-up or backfilled run; the
 * time a manual run was asked for), else `etl.runs.scheduled_for`, else the start of its first attempt (a
 * foreground `report-etl run`). Such a target already holds newer data, and a replay would overwrite it (replace)
 * or its keys (merge) with older rows. Logical time, not the clock, decides: a backfill of an older tick that
 * succeeds today does not supersede a newer failed tick. `append` runs are never superseded: every logical run
 * appends its own rows, which no later run brings.
 * @param f only this job; only failures whose newest attempt started since (the superseding run may be older)
 * @returns the newest failed attempt of each such run, newest first
 */
export async function failedRunsToReplay(db: Queryable, f: { job?: string | undefined; since?: Date | undefined } = {}): Promise<FailedRunToReplay[]> {
  const { rows } = await db.query<FailedRunToReplay>(
    `WITH newest AS (
       SELECT DISTINCT ON (job, run_key) *
         FROM etl.runs
        WHERE ($1::text IS NULL OR job = $1) AND ($2::timestamptz IS NULL OR started_at >= $2)
        ORDER BY job, run_key, started_at DESC
     ), failed AS (
       SELECT n.*, ${logicalTimeSql('n')} AS logical_time
         FROM newest n
        WHERE n.status = 'failed'
          AND NOT EXISTS (SELECT 1 FROM etl.runs s WHERE s.job = n.job AND s.run_key = n.run_key AND s.status = 'succeeded')
     )
     SELECT f.run_id, f.job, f.run_key, f.started_at, split_part(f.error, E'\\n', 1) AS error_first_line, f.write_mode,
            f.target_table, f.logical_time, sup.run_id AS superseded_by_run_id, sup.run_key AS superseded_by_run_key
       FROM failed f
       LEFT JOIN LATERAL (
         SELECT c.run_id, c.run_key FROM (
           SELECT x.run_id, x.run_key, ${logicalTimeSql('x')} AS logical_time
             FROM etl.runs x
            WHERE f.write_mode = ANY($3::text[])
              AND x.job = f.job AND x.status = 'succeeded' AND x.run_key <> f.run_key AND x.target_table = f.target_table
         ) c
          WHERE c.logical_time > f.logical_time
          ORDER BY c.logical_time DESC
          LIMIT 1
       ) sup ON true
      ORDER BY f.started_at DESC`,
    [f.job ?? null, f.since ?? null, STATE_WRITE_MODES],
  );
  return rows;
}

/** Filters of the admin run list (query string of /admin/runs). */
export interface RunListFilter {
  /** Only this job (exact name). */
  job?: string | undefined;
  /** Only attempts with this status. */
  status?: AttemptStatus | undefined;
  /** Attempts shown per job, newest first (1..200). */
  perJob: number;
}

/**
 * The distinct job names of etl.runs by a loose index scan of (job, started_at): one index probe per job instead
 * of a pass over every attempt.
 */
const DISTINCT_JOBS = `WITH RECURSIVE jobs AS (
    SELECT min(job) AS job FROM etl.runs
    UNION ALL
    SELECT (SELECT min(job) FROM etl.runs WHERE job > jobs.job) FROM jobs WHERE jobs.job IS NOT NULL)
  SELECT job FROM jobs WHERE job IS NOT NULL`;

/**
 * The latest attempts of every job (or of the filtered job/status), newest first within each job, jobs by name.
 * Each job's attempts come from the (job, started_at DESC) index through a LATERAL join.
 */
export async function listRecentRuns(db: Queryable, f: RunListFilter): Promise<RunListRow[]> {
  const jobs = f.job === undefined ? `(SELECT job FROM (${DISTINCT_JOBS}) d WHERE $1::text IS NULL)` : '(SELECT $1::text AS job)';
  const { rows } = await db.query<RunListRow>(
    `SELECT r.*, ${FIRST_ERROR_LINE} AS error_first_line
       FROM ${jobs} j
       CROSS JOIN LATERAL (
         SELECT * FROM etl.runs x
          WHERE x.job = j.job AND ($2::text IS NULL OR x.status = $2)
          ORDER BY x.started_at DESC
          LIMIT $3) r
      ORDER BY r.job, r.started_at DESC`,
    [f.job ?? null, f.status ?? null, f.perJob],
  );
  return rows;
}

/** The distinct job names in the run history, sorted (for the filter form). */
export async function listJobNames(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ job: string }>(DISTINCT_JOBS);
  return rows.map((r) => r.job);
}

/** One row of etl.run_errors as the run page shows it; `problem` and `details` are the parsed jsonb. */
export interface RunErrorRow {
  id: string;
  occurred_at: Date;
  stage: string;
  error_kind: string;
  retryable: boolean;
  http_status: number | null;
  message: string;
  server_message: string | null;
  problem: unknown;
  details: unknown;
}

/** Every error recorded for one attempt, oldest first. */
export async function listRunErrors(db: Queryable, runId: string): Promise<RunErrorRow[]> {
  const { rows } = await db.query<RunErrorRow>('SELECT * FROM etl.run_errors WHERE run_id = $1 ORDER BY occurred_at, id', [runId]);
  return rows;
}

/** The other attempts of one logical run (same job and run_key), newest first. */
export async function listAttempts(db: Queryable, job: string, runKey: string): Promise<AttemptRow[]> {
  const { rows } = await db.query<AttemptRow>('SELECT * FROM etl.runs WHERE job = $1 AND run_key = $2 ORDER BY started_at DESC LIMIT 50', [job, runKey]);
  return rows;
}

