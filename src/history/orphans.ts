/** Orphaned attempts: recorded `running`, but their owner session (attempt-owner.ts) is gone. */
import type pg from 'pg';
import type { AttemptRow, RunningAttempt } from './attempts.ts';

/** An attempt recorded `running` under an owner lock. */
export type OwnedAttempt = RunningAttempt & Pick<AttemptRow, 'job' | 'run_key' | 'started_at'> & { owner_lock: string };

/** Orphaned attempts of `jobs`, oldest first; never one without an owner (nothing says whether it is alive). */
export async function findOrphanedAttempts(pool: pg.Pool, jobs: readonly string[]): Promise<OwnedAttempt[]> {
  if (jobs.length === 0) return [];
  const { rows } = await pool.query<OwnedAttempt>(
    `SELECT attempt_id, job, run_key, attempt, report_job_id, worker, owner_lock::text AS owner_lock, started_at,
            progress
       FROM etl.attempts WHERE status = 'running' AND owner_lock IS NOT NULL AND job = ANY($1::text[])
      ORDER BY started_at`,
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
 * The owner keys no session holds any more, each probed once with `pg_try_advisory_lock` on one session (a lock
 * got is released at once). This process's own key counts as held.
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
