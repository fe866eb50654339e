/** Each job's health for the overview and /metrics, by the (job, started_at) index: one probe per job. */
import type { Queryable } from '../db.ts';
import type { AttemptStatus } from '../vocabulary.ts';
import { firstErrorLine } from './attempt-list.ts';
import { logicalTimeSql, supersededBySql } from './superseded.ts';

/** An attempt as the overview shows it. */
export interface RecentAttempt {
  attempt_id: string;
  run_key: string;
  attempt: number;
  status: AttemptStatus;
  started_at: Date;
  finished_at: Date | null;
  rows: number | null;
  duration_ms: number | null;
  error_first_line: string | null;
  /** Of its last error. */
  error_kind: string | null;
  /** When it failed: the run that supersedes its run (superseded.ts). */
  superseded_by_run_key: string | null;
}

/** The health figures of one job. */
export interface JobHealth {
  job: string;
  last: RecentAttempt | undefined;
  lastSuccess: RecentAttempt | undefined;
  lastFailure: RecentAttempt | undefined;
  /** While a final failure has not been followed by a success (etl.job_alerts). */
  failingSince: Date | undefined;
  /** The last finished attempts, oldest first. */
  recent: RecentAttempt[];
}

/** SQL: the logical time of the run of attempt `r`. */
const LOGICAL_TIME_OF_R = `(SELECT ${logicalTimeSql('rr')} FROM etl.runs rr
    WHERE rr.job = r.job AND rr.run_key = r.run_key)`;

const COLUMNS = `attempt_id, run_key, attempt, status, started_at, finished_at, rows::float8 AS rows,
  duration_ms::float8 AS duration_ms, ${firstErrorLine('r')} AS error_first_line,
  (SELECT e.error_kind FROM etl.run_errors e WHERE e.attempt_id = r.attempt_id ORDER BY e.id DESC LIMIT 1)
    AS error_kind,
  CASE WHEN r.status = 'failed' THEN ${supersededBySql('r', LOGICAL_TIME_OF_R)} END AS superseded_by_run_key`;

/**
 * Health of `jobs`, in the order given.
 * @param recent finished attempts per job for the sparklines
 */
export async function jobHealth(db: Queryable, jobs: readonly string[], recent = 20): Promise<JobHealth[]> {
  if (jobs.length === 0) return [];
  const one = (where: string) =>
    `(SELECT to_jsonb(x) FROM (SELECT ${COLUMNS} FROM etl.attempts r WHERE r.job = j.job ${where}
                                ORDER BY started_at DESC LIMIT 1) x)`;
  const { rows } = await db.query<{
    job: string;
    last: RecentAttempt | null;
    success: RecentAttempt | null;
    failure: RecentAttempt | null;
    failing_since: Date | null;
    recent: RecentAttempt[] | null;
  }>(
    `SELECT j.job, ${one('')} AS last, ${one(`AND status = 'succeeded'`)} AS success,
            ${one(`AND status = 'failed'`)} AS failure, a.failing_since,
            (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.started_at)
               FROM (SELECT ${COLUMNS} FROM etl.attempts r WHERE r.job = j.job AND status <> 'running'
                      ORDER BY started_at DESC LIMIT $2) x) AS recent
       FROM unnest($1::text[]) AS j(job) LEFT JOIN etl.job_alerts a ON a.job = j.job`,
    [jobs, recent],
  );
  const dates = (a: RecentAttempt | null): RecentAttempt | undefined =>
    a
      ? {
          ...a,
          started_at: new Date(a.started_at),
          finished_at: a.finished_at ? new Date(a.finished_at) : null,
          error_first_line: a.error_first_line || null,
        }
      : undefined;
  const byJob = new Map(rows.map((r) => [r.job, r]));
  return jobs.map((job) => {
    const r = byJob.get(job);
    return {
      job,
      last: dates(r?.last ?? null),
      lastSuccess: dates(r?.success ?? null),
      lastFailure: dates(r?.failure ?? null),
      failingSince: r?.failing_since ?? undefined,
      recent: (r?.recent ?? []).map((a) => dates(a)!),
    };
  });
}
