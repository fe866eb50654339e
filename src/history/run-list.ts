/**
 * Reading logical runs (`etl.runs`, with the newest attempt of each from `etl.attempts`) for `report-etl runs`,
 * `replay --failed` and the admin run list, one small typed function per query (docs/architecture.md "Layers").
 */
import type { Queryable } from '../db.ts';
import type { AttemptStatus } from '../vocabulary.ts';
import { firstErrorLine } from './attempt-list.ts';
import { logicalTimeSql, supersededBySql } from './superseded.ts';
import type { RunRow } from './runs.ts';

/** One logical run in a list: its etl.runs row, its newest attempt's id and the first line of that attempt's error. */
export interface RunListRow extends RunRow {
  /** The newest attempt (null before the first one is recorded). */
  newest_attempt_id: string | null;
  /** First line of the newest attempt's error: the server's words first (see firstErrorLine in attempt-list.ts). */
  error_first_line: string | null;
  /** When `report-etl revert` removed the run's appended rows, while no attempt has run since (else null). */
  reverted_at: Date | null;
}

/** Filter of {@link listRuns}. */
export interface RunFilter {
  job?: string | undefined;
  /** Only runs whose newest attempt has this status. */
  status?: string | undefined;
  /** Runs made (queued run taken by a worker, or first attempt started) at or after this instant. */
  since?: Date | undefined;
  /** Most rows (default 100). */
  limit?: number | undefined;
}

/**
 * Whether this database has the run history as this release writes it (`etl.attempts`, made by the migrations
 * with the present `etl.runs`). Read-only callers ask first instead of migrating.
 */
export async function hasRunHistory(db: Queryable): Promise<boolean> {
  const { rows } = await db.query<{ t: string | null }>(`SELECT to_regclass('etl.attempts')::text AS t`);
  return rows[0]?.t != null;
}

/** The jobs that have any run in the history, by name. */
export async function jobsWithHistory(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ job: string }>('SELECT DISTINCT job FROM etl.runs ORDER BY job');
  return rows.map((r) => r.job);
}

/** SQL: the newest attempt of run `r` with its first error line, for a LEFT JOIN LATERAL (alias `n`). */
const NEWEST_ATTEMPT = `(SELECT a.attempt_id AS newest_attempt_id, ${firstErrorLine('a')} AS error_first_line
     FROM etl.attempts a WHERE a.job = r.job AND a.run_key = r.run_key ORDER BY a.attempt DESC, a.started_at DESC LIMIT 1)`;

/** Logical runs, newest first (`report-etl runs`). */
export async function listRuns(db: Queryable, f: RunFilter = {}): Promise<RunListRow[]> {
  const { rows } = await db.query<RunListRow>(
    `SELECT r.*, n.newest_attempt_id, n.error_first_line,
            (SELECT max(v.reverted_at) FROM etl.reverts v WHERE v.job = r.job AND v.run_key = r.run_key AND v.after_attempt >= r.attempts) AS reverted_at
       FROM etl.runs r LEFT JOIN LATERAL ${NEWEST_ATTEMPT} n ON true
      WHERE ($1::text IS NULL OR r.job = $1) AND ($2::text IS NULL OR r.status = $2) AND ($3::timestamptz IS NULL OR r.created_at >= $3)
      ORDER BY r.created_at DESC
      LIMIT $4`,
    [f.job ?? null, f.status ?? null, f.since ?? null, f.limit ?? 100],
  );
  return rows;
}

export { STATE_WRITE_MODES } from './superseded.ts';

/** A failed logical run `replay --failed` considers: its newest attempt, and the run that supersedes it, if any. */
export interface FailedRunToReplay {
  job: string;
  run_key: string;
  /** The run's newest attempt, which failed. */
  attempt_id: string;
  /** When that attempt started. */
  started_at: Date;
  /** First line of its error. */
  error_first_line: string | null;
  write_mode: string;
  target_table: string;
  /** The run's logical time (see {@link failedRunsToReplay}). */
  logical_time: Date;
  /** The run key of the later logical run that supersedes this one, or null. */
  superseded_by_run_key: string | null;
}

/**
 * Logical runs whose newest attempt failed and that never succeeded: what `replay --failed` considers, each with
 * the run that supersedes it.
 *
 * Whether each is superseded is decided by history/superseded.ts, the rule the jobs overview uses too.
 * @param f only this job; only failures whose newest attempt started since (the superseding run may be older)
 * @returns one row per such run, newest failure first
 */
export async function failedRunsToReplay(
  db: Queryable,
  f: { job?: string | undefined; since?: Date | undefined } = {},
): Promise<FailedRunToReplay[]> {
  const { rows } = await db.query<FailedRunToReplay>(
    `WITH failed AS (
       SELECT r.job, r.run_key, a.attempt_id, a.started_at, a.error, a.write_mode, a.target_table, ${logicalTimeSql('r')} AS logical_time
         FROM etl.runs r
         JOIN LATERAL (SELECT * FROM etl.attempts x WHERE x.job = r.job AND x.run_key = r.run_key ORDER BY x.attempt DESC, x.started_at DESC LIMIT 1) a ON true
        WHERE r.status = 'failed' AND ($1::text IS NULL OR r.job = $1) AND ($2::timestamptz IS NULL OR a.started_at >= $2)
          AND NOT EXISTS (SELECT 1 FROM etl.attempts s WHERE s.job = r.job AND s.run_key = r.run_key AND s.status = 'succeeded')
     )
     SELECT f.job, f.run_key, f.attempt_id, f.started_at, ${firstErrorLine('f')} AS error_first_line, f.write_mode,
            f.target_table, f.logical_time,
            ${supersededBySql({ job: 'f.job', runKey: 'f.run_key', writeMode: 'f.write_mode', targetTable: 'f.target_table', logicalTime: 'f.logical_time' })} AS superseded_by_run_key
       FROM failed f
      ORDER BY f.started_at DESC`,
    [f.job ?? null, f.since ?? null],
  );
  return rows;
}

/** Filters of the admin run list (query string of /admin/runs). */
export interface RunListFilter {
  /** Only this job (exact name). */
  job?: string | undefined;
  /** Only runs whose newest attempt has this status. */
  status?: AttemptStatus | undefined;
  /** Runs shown per job, newest first (1..200). */
  perJob: number;
}

/**
 * The distinct job names of etl.runs by a loose index scan of its primary key (job, run_key): one index probe per
 * job instead of a pass over every run.
 */
const DISTINCT_JOBS = `WITH RECURSIVE jobs AS (
    SELECT min(job) AS job FROM etl.runs
    UNION ALL
    SELECT (SELECT min(job) FROM etl.runs WHERE job > jobs.job) FROM jobs WHERE jobs.job IS NOT NULL)
  SELECT job FROM jobs WHERE job IS NOT NULL`;

/**
 * The latest logical runs of every job (or of the filtered job/status), newest first within each job, jobs by name.
 * Each job's runs come from the (job, created_at DESC) index through a LATERAL join.
 */
export async function listRecentRuns(db: Queryable, f: RunListFilter): Promise<RunListRow[]> {
  const jobs =
    f.job === undefined ? `(SELECT job FROM (${DISTINCT_JOBS}) d WHERE $1::text IS NULL)` : '(SELECT $1::text AS job)';
  const { rows } = await db.query<RunListRow>(
    `SELECT r.*, n.newest_attempt_id, n.error_first_line
       FROM ${jobs} j
       CROSS JOIN LATERAL (
         SELECT * FROM etl.runs x
          WHERE x.job = j.job AND ($2::text IS NULL OR x.status = $2)
          ORDER BY x.created_at DESC
          LIMIT $3) r
       LEFT JOIN LATERAL ${NEWEST_ATTEMPT} n ON true
      ORDER BY r.job, r.created_at DESC`,
    [f.job ?? null, f.status ?? null, f.perJob],
  );
  return rows;
}

/** The distinct job names in the run history, sorted (for the filter form). */
export async function listJobNames(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ job: string }>(DISTINCT_JOBS);
  return rows.map((r) => r.job);
}
