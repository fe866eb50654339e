/** Orphaned attempts: recorded `running`, but their owner session (attempt-owner.ts) is gone. */
import type pg from 'pg';
import type { AttemptRow, RunningAttempt } from './attempts.ts';

/** An attempt recorded `running` under an owner lock. */
export type OwnedAttempt = RunningAttempt &
  Pick<AttemptRow, 'job' | 'run_key' | 'started_at'> & {
    owner_lock: string;
  };

/**
 * Orphaned attempts of `jobs`, oldest first; never one without an owner (nothing says whether it is alive).
 * @param onAlive called with the owner keys of the other running attempts, found alive now
 */
export async function findOrphanedAttempts(
  pool: pg.Pool,
  jobs: readonly string[],
  onAlive?: (ownerKeys: readonly string[]) => void,
): Promise<OwnedAttempt[]> {
  if (jobs.length === 0) return [];
  const { rows } = await pool.query<OwnedAttempt>(
    `SELECT a.attempt_id, a.job, a.run_key, a.attempt, a.report_job_id, a.worker, a.owner_lock::text AS owner_lock,
            a.started_at, a.progress
       FROM etl.attempts a
      WHERE a.status = 'running' AND a.owner_lock IS NOT NULL AND a.job = ANY($1::text[])
      ORDER BY a.started_at`,
    [jobs],
  );
  if (rows.length === 0) return [];
  const gone = await goneOwners(
    pool,
    rows.map((r) => r.owner_lock),
  );
  onAlive?.([...new Set(rows.map((r) => r.owner_lock))].filter((k) => !gone.has(k)));
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

/**
 * How many attempts run `runKey` of `job` had (those started at `since` or later, when given), and how many of them
 * were closed as orphans (ORPHANED).
 */
export async function orphanedAttemptsOf(
  pool: pg.Pool,
  job: string,
  runKey: string,
  since?: Date,
): Promise<{ orphaned: number; attempts: number }> {
  const { rows } = await pool.query<{ orphaned: number; attempts: number }>(
    `SELECT count(*)::int AS attempts,
            count(*) FILTER (WHERE EXISTS (SELECT 1 FROM etl.run_errors e
                                            WHERE e.attempt_id = a.attempt_id AND e.error_kind = 'ORPHANED'))::int
              AS orphaned
       FROM etl.attempts a WHERE a.job = $1 AND a.run_key = $2 AND ($3::timestamptz IS NULL OR a.started_at >= $3)`,
    [job, runKey, since ?? null],
  );
  return rows[0] ?? { orphaned: 0, attempts: 0 };
}
