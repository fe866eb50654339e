/** Lists of logical runs (etl.runs with each run's newest attempt) for `runs`, `replay --failed` and the admin. */
import type { Queryable } from '../db.ts';
import type { AttemptStatus } from '../vocabulary.ts';
import { firstErrorLine, jobFilterSql, type Counted, type ListFilter } from './attempt-list.ts';
import { logicalTimeSql, supersededBySql } from './superseded.ts';
import type { RunRow } from './runs.ts';

/** A logical run in a list, with its newest attempt. */
export interface RunListRow extends RunRow {
  /** Null before the first attempt. */
  newest_attempt_id: string | null;
  /** See attempt-list.ts firstErrorLine. */
  error_first_line: string | null;
  /** When `report-etl revert` removed its rows, while no attempt has run since. */
  reverted_at: Date | null;
}

/** Whether this database has the run history (etl.attempts): read-only callers ask instead of migrating. */
export async function hasRunHistory(db: Queryable): Promise<boolean> {
  const { rows } = await db.query<{ t: string | null }>(`SELECT to_regclass('etl.attempts')::text AS t`);
  return rows[0]?.t != null;
}

/** SQL: the newest attempt of run `r` with its first error line, for a LEFT JOIN LATERAL. */
const NEWEST_ATTEMPT = `(SELECT a.attempt_id AS newest_attempt_id, ${firstErrorLine('a')} AS error_first_line
     FROM etl.attempts a WHERE a.job = r.job AND a.run_key = r.run_key
     ORDER BY a.attempt DESC, a.started_at DESC LIMIT 1)`;

/** Logical runs, newest first (`report-etl runs`); a job's filter takes in the runs of its mandants. */
export async function listRuns(db: Queryable, f: ListFilter = {}): Promise<Counted<RunListRow>[]> {
  const { rows } = await db.query<Counted<RunListRow>>(
    `SELECT r.*, n.newest_attempt_id, n.error_first_line, (count(*) OVER ())::int AS matching,
            (SELECT max(v.reverted_at) FROM etl.reverts v
              WHERE v.job = r.job AND v.run_key = r.run_key AND v.after_attempt >= r.attempts) AS reverted_at
       FROM etl.runs r LEFT JOIN LATERAL ${NEWEST_ATTEMPT} n ON true
      WHERE ${jobFilterSql('r.job', '$1')} AND ($2::text IS NULL OR r.status = $2)
        AND ($3::timestamptz IS NULL OR r.created_at >= $3)
      ORDER BY r.created_at DESC
      LIMIT $4`,
    [f.job ?? null, f.status ?? null, f.since ?? null, f.limit ?? 100],
  );
  return rows;
}

/** A failed logical run `replay --failed` considers, with its newest (failed) attempt. */
export interface FailedRunToReplay {
  job: string;
  run_key: string;
  /** The run's; null for a foreground run never replayed. */
  queue_job_id: string | null;
  attempt_id: string;
  started_at: Date;
  error_first_line: string | null;
  write_mode: string;
  target_table: string;
  /** superseded.ts logicalTimeSql. */
  logical_time: Date;
  /** The later run that supersedes it (superseded.ts), or null. */
  superseded_by_run_key: string | null;
}

/**
 * Logical runs whose newest attempt failed and that never succeeded, newest failure first.
 * @param f only this job; only failures whose newest attempt started since (the superseding run may be older)
 */
export async function failedRunsToReplay(
  db: Queryable,
  f: { job?: string | undefined; since?: Date | undefined } = {},
): Promise<FailedRunToReplay[]> {
  const { rows } = await db.query<FailedRunToReplay>(
    `WITH failed AS (
       SELECT r.job, r.run_key, r.queue_job_id, a.attempt_id, a.started_at, a.error, a.write_mode, a.target_table,
              a.request, ${logicalTimeSql('r')} AS logical_time
         FROM etl.runs r
         JOIN LATERAL (SELECT * FROM etl.attempts x WHERE x.job = r.job AND x.run_key = r.run_key
                        ORDER BY x.attempt DESC, x.started_at DESC LIMIT 1) a ON true
        WHERE r.status = 'failed' AND ($1::text IS NULL OR r.job = $1)
          AND ($2::timestamptz IS NULL OR a.started_at >= $2)
          AND NOT EXISTS (SELECT 1 FROM etl.attempts s
                           WHERE s.job = r.job AND s.run_key = r.run_key AND s.status = 'succeeded')
     )
     SELECT f.job, f.run_key, f.queue_job_id, f.attempt_id, f.started_at, ${firstErrorLine('f')} AS error_first_line,
            f.write_mode, f.target_table, f.logical_time,
            ${supersededBySql('f', 'f.logical_time')} AS superseded_by_run_key
       FROM failed f
      ORDER BY f.started_at DESC`,
    [f.job ?? null, f.since ?? null],
  );
  return rows;
}

/** Filters of the admin run list (/admin/runs). */
export interface RunListFilter {
  job?: string | undefined;
  /** Of the newest attempt. */
  status?: AttemptStatus | undefined;
  /** Runs per job, newest first (1..200). */
  perJob: number;
}

/** SQL: the distinct jobs of etl.runs, sorted, by a loose index scan of its primary key (one probe per job). */
const DISTINCT_JOBS = `WITH RECURSIVE jobs AS (
    SELECT min(job) AS job FROM etl.runs
    UNION ALL
    SELECT (SELECT min(job) FROM etl.runs WHERE job > jobs.job) FROM jobs WHERE jobs.job IS NOT NULL)
  SELECT job FROM jobs WHERE job IS NOT NULL ORDER BY job`;

/** The latest runs of every job (or the filtered one), jobs by name, newest first within each. */
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

/** The jobs that have runs in the history, sorted. */
export async function listJobNames(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ job: string }>(DISTINCT_JOBS);
  return rows.map((r) => r.job);
}
