/**
 * etl.appended_runs (docs/observability.md "Run history"): one claim per appended logical run, made in the loading
 * transaction; `report-etl revert` drops it with the rows, so that a replay appends the run again.
 */
import type { Queryable } from '../db.ts';

/** Whether rows of this logical run were already appended. */
export async function isAppended(db: Queryable, job: string, runKey: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM etl.appended_runs WHERE job = $1 AND run_key = $2', [job, runKey]);
  return (rowCount ?? 0) > 0;
}

/**
 * Claims (job, runKey) for an append inside the loading transaction.
 * @returns false when another attempt already committed this logical run
 */
export async function claimAppend(
  db: Queryable,
  job: string,
  runKey: string,
  attemptId: string,
  targetTable: string,
  rows: number,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO etl.appended_runs (job, run_key, attempt_id, target_table, rows) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (job, run_key) DO NOTHING`,
    [job, runKey, attemptId, targetTable, rows],
  );
  return (rowCount ?? 0) > 0;
}

/** A run's claim; rows as text. */
export interface AppendClaim {
  job: string;
  run_key: string;
  attempt_id: string;
  target_table: string;
  rows: string;
  committed_at: Date;
}

/**
 * Reads the claim of (job, runKey), or undefined (never appended, or reverted).
 * @param forUpdate lock it until the transaction ends (`report-etl revert`)
 */
export async function getAppendClaim(
  db: Queryable,
  job: string,
  runKey: string,
  forUpdate = false,
): Promise<AppendClaim | undefined> {
  const { rows } = await db.query<AppendClaim>(
    `SELECT job, run_key, attempt_id, target_table, rows::text AS rows, committed_at
       FROM etl.appended_runs WHERE job = $1 AND run_key = $2${forUpdate ? ' FOR UPDATE' : ''}`,
    [job, runKey],
  );
  return rows[0];
}

/** The other jobs that appended a run with this run key into the same target (their rows share the key). */
export async function otherJobsAppendingRunKey(
  db: Queryable,
  job: string,
  runKey: string,
  targetTable: string,
): Promise<string[]> {
  const { rows } = await db.query<{ job: string }>(
    'SELECT job FROM etl.appended_runs WHERE run_key = $1 AND target_table = $2 AND job <> $3 ORDER BY job',
    [runKey, targetTable, job],
  );
  return rows.map((r) => r.job);
}

/** Deletes the claim of (job, runKey), inside a revert's transaction. */
export async function dropAppendClaim(db: Queryable, job: string, runKey: string): Promise<void> {
  await db.query('DELETE FROM etl.appended_runs WHERE job = $1 AND run_key = $2', [job, runKey]);
}
