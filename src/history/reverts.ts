/**
 * etl.reverts (docs/observability.md "Run history"): one row per `report-etl revert`, in the transaction that deleted
 * the rows. A run stays reverted while its newest revert counts every attempt it had (`after_attempt` ≥ attempts).
 */
import type { Queryable } from '../db.ts';

/** What a revert records. */
export interface RevertRecord {
  job: string;
  runKey: string;
  /** The attempt that appended the rows, and when it committed. */
  attemptId: string;
  appendedAt: Date;
  targetTable: string;
  /** Rows appended, and rows the revert deleted. */
  appendedRows: number;
  rows: number;
  /** `user@host`. */
  revertedBy: string | undefined;
}

/**
 * Records a revert inside its transaction, with the run's attempt count as `after_attempt`, and sets the run's
 * `rows` back to NULL, as before its first success.
 * @returns the revert's id and time (the transaction's)
 */
export async function insertRevert(db: Queryable, r: RevertRecord): Promise<{ revertId: string; revertedAt: Date }> {
  const { rows } = await db.query<{ revert_id: string; reverted_at: Date }>(
    `WITH run AS (UPDATE etl.runs SET rows = NULL WHERE job = $1 AND run_key = $2 RETURNING attempts)
     INSERT INTO etl.reverts (job, run_key, attempt_id, appended_at, after_attempt, target_table, appended_rows, rows,
                              reverted_by)
     SELECT $1, $2, $3, $4,
            coalesce((SELECT attempts FROM run),
                     (SELECT max(attempt) FROM etl.attempts WHERE job = $1 AND run_key = $2), 0),
            $5, $6, $7, $8
     RETURNING revert_id::text, reverted_at`,
    [r.job, r.runKey, r.attemptId, r.appendedAt, r.targetTable, r.appendedRows, r.rows, r.revertedBy ?? null],
  );
  return { revertId: rows[0]!.revert_id, revertedAt: rows[0]!.reverted_at };
}

/** One etl.reverts row; bigints as text. */
export interface RevertRow {
  revert_id: string;
  job: string;
  run_key: string;
  attempt_id: string;
  appended_at: Date;
  after_attempt: number;
  target_table: string;
  appended_rows: string;
  rows: string;
  reverted_at: Date;
  reverted_by: string | null;
}

/** The reverts of a logical run, newest first. */
export async function revertsOfRun(db: Queryable, job: string, runKey: string): Promise<RevertRow[]> {
  const { rows } = await db.query<RevertRow>(
    `SELECT revert_id::text, job, run_key, attempt_id, appended_at, after_attempt, target_table, appended_rows::text,
            rows::text, reverted_at, reverted_by
       FROM etl.reverts WHERE job = $1 AND run_key = $2 ORDER BY after_attempt DESC, revert_id DESC`,
    [job, runKey],
  );
  return rows;
}

/** Whether the run's newest revert came after all its attempts (`reverts` newest first). */
export function isReverted(run: { attempts: number }, reverts: readonly Pick<RevertRow, 'after_attempt'>[]): boolean {
  return reverts.length > 0 && reverts[0]!.after_attempt >= run.attempts;
}
