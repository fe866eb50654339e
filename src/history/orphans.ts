/**
 * Orphaned attempts: attempts still recorded `running` whose owner session
 * (attempt-owner.ts) is gone. Each SQL operation one small function (docs/architecture.md).
 */
import type pg from 'pg';

/** An attempt recorded `running` under an owner lock. */
export interface OwnedAttempt {
  attempt_id: string;
  job: string;
  run_key: string;
  attempt: number;
  report_job_id: string | null;
  worker: string | null;
  owner_lock: string;
  started_at: Date;
}

/**
 * Attempts of `jobs` still `running` whose owner session no longer holds its lock, oldest first. Attempts without
 * an owner (recorded before migration 0007, or by a caller without one) are never returned: nothing says whether
 * they are alive.
 *
 * Each distinct owner is probed once with `pg_try_advisory_lock` on one session of `pool`: getting the lock means
 * the owner is gone (it is released again at once); a live owner's session still holds it.
 * @param jobs the jobs.yaml jobs to look at (the caller knows their connections)
 */
export async function findOrphanedAttempts(pool: pg.Pool, jobs: readonly string[]): Promise<OwnedAttempt[]> {
  if (jobs.length === 0) return [];
  const { rows } = await pool.query<OwnedAttempt>(
    `SELECT attempt_id, job, run_key, attempt, report_job_id, worker, owner_lock::text AS owner_lock, started_at
       FROM etl.attempts WHERE status = 'running' AND owner_lock IS NOT NULL AND job = ANY($1::text[]) ORDER BY started_at`,
    [jobs],
  );
  if (rows.length === 0) return [];
  const gone = await goneOwners(
    pool,
    rows.map((r) => r.owner_lock),
  );
  return rows.filter((r) => gone.has(r.owner_lock));
}

/**
 * Which of the owner keys no session holds any more (their process is gone), probed once each with
 * `pg_try_advisory_lock` on one session of `pool` (a lock got is released again at once). A key held by this
 * process's own owner session counts as alive, like any other holder.
 */
export async function goneOwners(pool: pg.Pool, ownerKeys: readonly string[]): Promise<Set<string>> {
  const gone = new Set<string>();
  if (ownerKeys.length === 0) return gone;
  const client = await pool.connect();
  try {
    for (const owner of new Set(ownerKeys)) {
      const { rows: got } = await client.query<{ got: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS got', [
        owner,
      ]);
      if (got[0]?.got) {
        gone.add(owner);
        await client.query('SELECT pg_advisory_unlock($1::bigint)', [owner]);
      }
    }
  } finally {
    client.release();
  }
  return gone;
}
