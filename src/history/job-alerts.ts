/**
 * What each job's alerts last said (etl.job_alerts): each change is one atomic statement that tells its caller
 * whether it made it, so that an event is sent once however many processes see it.
 */
import type { Queryable } from '../db.ts';

/**
 * Records that `job` failed for good in attempt `attemptId`.
 * @returns since when the job is failing (now, or an earlier failure's time)
 */
export async function markFailing(db: Queryable, job: string, attemptId: string): Promise<Date> {
  const { rows } = await db.query<{ failing_since: Date }>(
    `INSERT INTO etl.job_alerts (job, failing_since, failed_attempt_id) VALUES ($1, now(), $2)
     ON CONFLICT (job) DO UPDATE
       SET failing_since = coalesce(etl.job_alerts.failing_since, now()), failed_attempt_id = $2, updated_at = now()
     RETURNING failing_since`,
    [job, attemptId],
  );
  return rows[0]!.failing_since;
}

/**
 * Records that `job` succeeded, clearing its failing state.
 * @returns the failure it recovered from, or undefined when it was not failing (no `recovered` is due)
 */
export async function clearFailing(
  db: Queryable,
  job: string,
): Promise<{ failingSince: Date; failedAttemptId: string | null } | undefined> {
  const { rows } = await db.query<{ failing_since: Date; failed_attempt_id: string | null }>(
    `UPDATE etl.job_alerts a SET failing_since = NULL, failed_attempt_id = NULL, updated_at = now()
       FROM (SELECT job, failing_since, failed_attempt_id FROM etl.job_alerts WHERE job = $1 FOR UPDATE) old
      WHERE a.job = old.job AND old.failing_since IS NOT NULL
      RETURNING old.failing_since, old.failed_attempt_id`,
    [job],
  );
  const r = rows[0];
  return r ? { failingSince: r.failing_since, failedAttemptId: r.failed_attempt_id } : undefined;
}

/**
 * When the freshness of each job was first checked.
 * @param record insert now for jobs seen for the first time (the janitor; pages and metrics only read)
 */
export async function firstSeen(db: Queryable, jobs: readonly string[], record = true): Promise<Map<string, Date>> {
  if (jobs.length === 0) return new Map();
  if (record)
    await db.query('INSERT INTO etl.job_alerts (job) SELECT unnest($1::text[]) ON CONFLICT (job) DO NOTHING', [jobs]);
  const { rows } = await db.query<{ job: string; first_seen: Date }>(
    'SELECT job, first_seen FROM etl.job_alerts WHERE job = ANY($1::text[])',
    [jobs],
  );
  return new Map(rows.map((r) => [r.job, r.first_seen]));
}

/**
 * Claims the `stale` alert of `job` for the breach counted from `base` (its last success, or its first_seen).
 * @returns true for the one caller that claims it
 */
export async function claimStaleAlert(db: Queryable, job: string, base: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE etl.job_alerts SET stale_alerted_for = $2, updated_at = now()
      WHERE job = $1 AND stale_alerted_for IS DISTINCT FROM $2`,
    [job, base],
  );
  return (rowCount ?? 0) > 0;
}
