/**
 * Retention of the run history (jobs.yaml `history.keep`): attempts
 * older than the cut-off are deleted in small batches (their etl.run_errors go with them, ON DELETE CASCADE), then
 * the etl.run_requests rows no attempt refers to any more. Never deleted: a running attempt, and the newest
 * succeeded and the newest failed attempt of each job, however old. etl.appended_runs is kept: it is what makes an
 * append exactly-once when an old run is replayed.
 */
import type { Queryable } from '../db.ts';

/** What one {@link pruneHistory} call deleted. */
export interface PruneResult {
  runs: number;
  runRequests: number;
  /** Whether it stopped at `maxBatches` with more to delete (the next call goes on). */
  more: boolean;
}

/**
 * Deletes the history of `jobs` older than `before`, at most `batchSize` attempts per statement and `maxBatches`
 * statements per call, so that no statement holds many locks or runs long.
 * @param jobs the jobs whose history is pruned (those of this jobs.yaml: another one may share the database)
 */
export async function pruneHistory(db: Queryable, jobs: readonly string[], before: Date, o: { batchSize?: number; maxBatches?: number } = {}): Promise<PruneResult> {
  const batchSize = o.batchSize ?? 500;
  const maxBatches = o.maxBatches ?? 20;
  let runs = 0;
  let more = false;
  if (jobs.length === 0) return { runs: 0, runRequests: 0, more: false };
  for (let i = 0; i < maxBatches; i++) {
    const { rowCount } = await db.query(
      `WITH keep AS (
         SELECT k.run_id FROM unnest($1::text[]) AS j(job)
           CROSS JOIN LATERAL (
             (SELECT run_id FROM etl.runs WHERE job = j.job AND status = 'succeeded' ORDER BY started_at DESC LIMIT 1)
             UNION ALL
             (SELECT run_id FROM etl.runs WHERE job = j.job AND status = 'failed' ORDER BY started_at DESC LIMIT 1)) k),
       victims AS (
         SELECT run_id FROM etl.runs
          WHERE job = ANY($1::text[]) AND started_at < $2 AND status <> 'running' AND run_id NOT IN (SELECT run_id FROM keep)
          ORDER BY started_at LIMIT $3 FOR UPDATE SKIP LOCKED)
       DELETE FROM etl.runs WHERE run_id IN (SELECT run_id FROM victims)`,
      [jobs, before, batchSize],
    );
    runs += rowCount ?? 0;
    if ((rowCount ?? 0) < batchSize) break;
    if (i === maxBatches - 1) more = true;
  }
  const { rowCount: requests } = await db.query(
    `DELETE FROM etl.run_requests WHERE (job, run_key) IN (
       SELECT q.job, q.run_key FROM etl.run_requests q WHERE q.job = ANY($1::text[]) AND q.created_at < $2
          AND NOT EXISTS (SELECT 1 FROM etl.runs r WHERE r.job = q.job AND r.run_key = q.run_key)
        LIMIT $3)`,
    [jobs, before, batchSize * maxBatches],
  );
  return { runs, runRequests: requests ?? 0, more };
}
