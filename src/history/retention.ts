/**
 * Retention of the run history (jobs.yaml `history.keep`): attempts older than the cut-off are deleted in small
 * batches (their etl.run_errors and etl.run_documents go with them, ON DELETE CASCADE), then the etl.runs rows older
 * than the cut-off that no attempt is left of (or that never got one). Never deleted: a running attempt, and the
 * newest succeeded and the newest failed attempt of each job, however old, with their runs. A run that keeps some of
 * its attempts keeps its row as it was (attempt count, first start, rows). etl.appended_runs is kept: it is what
 * makes an append exactly-once when an old run is replayed.
 */
import type { Queryable } from '../db.ts';

/** What one {@link pruneHistory} call deleted. */
export interface PruneResult {
  /** etl.attempts rows deleted. */
  attempts: number;
  /** etl.runs rows deleted. */
  runs: number;
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
  let attempts = 0;
  let more = false;
  if (jobs.length === 0) return { attempts: 0, runs: 0, more: false };
  for (let i = 0; i < maxBatches; i++) {
    const { rowCount } = await db.query(
      `WITH keep AS (
         SELECT k.attempt_id FROM unnest($1::text[]) AS j(job)
           CROSS JOIN LATERAL (
             (SELECT attempt_id FROM etl.attempts WHERE job = j.job AND status = 'succeeded' ORDER BY started_at DESC LIMIT 1)
             UNION ALL
             (SELECT attempt_id FROM etl.attempts WHERE job = j.job AND status = 'failed' ORDER BY started_at DESC LIMIT 1)) k),
       victims AS (
         SELECT attempt_id FROM etl.attempts
          WHERE job = ANY($1::text[]) AND started_at < $2 AND status <> 'running' AND attempt_id NOT IN (SELECT attempt_id FROM keep)
          ORDER BY started_at LIMIT $3 FOR UPDATE SKIP LOCKED)
       DELETE FROM etl.attempts WHERE attempt_id IN (SELECT attempt_id FROM victims)`,
      [jobs, before, batchSize],
    );
    attempts += rowCount ?? 0;
    if ((rowCount ?? 0) < batchSize) break;
    if (i === maxBatches - 1) more = true;
  }
  // An attempt inserted meanwhile marks its run `running` under the row lock: FOR UPDATE reads the row again and
  // leaves the run alone (the NOT EXISTS below sees only what was committed when the statement began).
  const { rowCount: runs } = await db.query(
    `DELETE FROM etl.runs WHERE (job, run_key) IN (
       SELECT r.job, r.run_key FROM etl.runs r WHERE r.job = ANY($1::text[]) AND r.created_at < $2 AND r.status IS DISTINCT FROM 'running'
          AND NOT EXISTS (SELECT 1 FROM etl.attempts a WHERE a.job = r.job AND a.run_key = r.run_key)
        LIMIT $3 FOR UPDATE SKIP LOCKED)`,
    [jobs, before, batchSize * maxBatches],
  );
  return { attempts, runs: runs ?? 0, more };
}
