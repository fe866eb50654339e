/**
 * Retention (jobs.yaml `history.keep`): old attempts in small batches (their errors and documents cascade), then
 * old runs with no attempt left. Never deleted: running attempts, each job's newest success and failure, and
 * etl.appended_runs (an old run's replay stays exactly-once). What deleted attempts counted goes to
 * etl.pruned_attempts in the same statement, so that /metrics' counters never drop.
 */
import type { Queryable } from '../db.ts';
import { DURATION_BUCKETS_SECONDS } from './attempt-aggregates.ts';

/** Rows one {@link pruneHistory} call deleted; `more`: it stopped at `maxBatches`. */
export type PruneResult = { attempts: number; runs: number; more: boolean };

/**
 * Deletes the history of `jobs` (this jobs.yaml's: another may share the database) older than `before`, in
 * statements of at most `batchSize` attempts, so that none holds many locks or runs long.
 */
export async function pruneHistory(
  db: Queryable,
  jobs: readonly string[],
  before: Date,
  o: { batchSize?: number; maxBatches?: number } = {},
): Promise<PruneResult> {
  const batchSize = o.batchSize ?? 500;
  const maxBatches = o.maxBatches ?? 20;
  let attempts = 0;
  let more = false;
  if (jobs.length === 0) return { attempts: 0, runs: 0, more: false };
  for (let i = 0; i < maxBatches; i++) {
    const { rows } = await db.query<{ n: number }>(
      `WITH keep AS (
         SELECT k.attempt_id FROM unnest($1::text[]) AS j(job)
           CROSS JOIN LATERAL (
             (SELECT attempt_id FROM etl.attempts WHERE job = j.job AND status = 'succeeded'
               ORDER BY started_at DESC LIMIT 1)
             UNION ALL
             (SELECT attempt_id FROM etl.attempts WHERE job = j.job AND status = 'failed'
               ORDER BY started_at DESC LIMIT 1)) k),
       victims AS (
         SELECT attempt_id FROM etl.attempts
          WHERE job = ANY($1::text[]) AND started_at < $2 AND status <> 'running'
            AND attempt_id NOT IN (SELECT attempt_id FROM keep)
          ORDER BY started_at LIMIT $3 FOR UPDATE SKIP LOCKED),
       gone AS (
         DELETE FROM etl.attempts WHERE attempt_id IN (SELECT attempt_id FROM victims)
         RETURNING job, status, duration_ms, rows, bytes),
       summed AS (
         INSERT INTO etl.pruned_attempts AS p (job, status, attempts, timed, sum_ms, rows, bytes, bounds_ms, buckets)
         SELECT g.job, g.status, count(*), count(g.duration_ms), coalesce(sum(g.duration_ms), 0),
                coalesce(sum(g.rows) FILTER (WHERE g.status = 'succeeded'), 0),
                coalesce(sum(g.bytes) FILTER (WHERE g.status = 'succeeded'), 0),
                $4::bigint[],
                ARRAY(SELECT (SELECT count(*) FROM gone x
                               WHERE x.job = g.job AND x.status = g.status AND x.duration_ms <= b.le)
                        FROM unnest($4::bigint[]) WITH ORDINALITY AS b(le, i) ORDER BY b.i)
           FROM gone g GROUP BY g.job, g.status
         ON CONFLICT (job, status) DO UPDATE SET
           attempts = p.attempts + EXCLUDED.attempts, timed = p.timed + EXCLUDED.timed,
           sum_ms = p.sum_ms + EXCLUDED.sum_ms,
           rows = p.rows + EXCLUDED.rows, bytes = p.bytes + EXCLUDED.bytes,
           -- Counts kept under other bounds cannot be added to: they start again under the current ones.
           bounds_ms = EXCLUDED.bounds_ms,
           buckets = CASE WHEN p.bounds_ms = EXCLUDED.bounds_ms
                          THEN ARRAY(SELECT a + e FROM unnest(p.buckets, EXCLUDED.buckets) AS u(a, e))
                          ELSE EXCLUDED.buckets END
         RETURNING 1)
       SELECT count(*)::int AS n FROM gone`,
      [jobs, before, batchSize, DURATION_BUCKETS_SECONDS.map((b) => Math.round(b * 1000))],
    );
    const deleted = rows[0]?.n ?? 0;
    attempts += deleted;
    if (deleted < batchSize) break;
    if (i === maxBatches - 1) more = true;
  }
  // An attempt inserted meanwhile marks its run `running` under the row lock, which FOR UPDATE reads again (the
  // NOT EXISTS sees only what was committed when the statement began).
  const { rowCount: runs } = await db.query(
    `DELETE FROM etl.runs WHERE (job, run_key) IN (
       SELECT r.job, r.run_key FROM etl.runs r
        WHERE r.job = ANY($1::text[]) AND r.created_at < $2 AND r.status IS DISTINCT FROM 'running'
          AND NOT EXISTS (SELECT 1 FROM etl.attempts a WHERE a.job = r.job AND a.run_key = r.run_key)
        LIMIT $3 FOR UPDATE SKIP LOCKED)`,
    [jobs, before, batchSize * maxBatches],
  );
  return { attempts, runs: runs ?? 0, more };
}
