/**
 * Exactly-once append loads (README "Loaded tables": append): `etl.appended_runs` holds one row per logical run
 * whose rows were appended, claimed inside the loading transaction (migrations/0001).
 */
import type { Queryable } from '../db.ts';

/** Whether rows of this logical run were already appended. */
export async function isAppended(db: Queryable, job: string, runKey: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM etl.appended_runs WHERE job = $1 AND run_key = $2', [job, runKey]);
  return (rowCount ?? 0) > 0;
}

/**
 * Claims (job, runKey) for an append inside the loading transaction.
 * @returns false when another attempt already committed this logical run (the caller rolls back)
 */
export async function claimAppend(db: Queryable, job: string, runKey: string, attemptId: string, targetTable: string, rows: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO etl.appended_runs (job, run_key, attempt_id, target_table, rows) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (job, run_key) DO NOTHING`,
    [job, runKey, attemptId, targetTable, rows],
  );
  return (rowCount ?? 0) > 0;
}
