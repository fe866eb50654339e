/**
 * Reading attempts (`etl.attempts`, `etl.run_errors`) for `report-etl runs --attempts`, the admin run and attempt
 * pages and the jobs overview, one small typed function per query.
 */
import type { Queryable } from '../db.ts';
import type { AttemptRow } from './attempts.ts';

/**
 * SQL expression: the summary of a failure text `t`: its first meaningful line. That is its first non-blank line,
 * and when that line only introduces what follows (it ends in ':', as "Report execution failed:" does) the next
 * non-blank line after it too: `Report execution failed: Division by zero in formula 'Marge'`. The whole text stays
 * in the history and on the attempt page (failure-text.ts says the same in TypeScript).
 */
export function summaryLineSql(t: string): string {
  return `(SELECT CASE WHEN m[1] LIKE '%:' AND m[2] IS NOT NULL THEN m[1] || ' ' || m[2] ELSE m[1] END
     FROM regexp_match(${t}, '^\\s*([^\\n]*\\S)[ \\t\\r]*(?:\\n\\s*([^\\n]*\\S))?') AS m)`;
}

/**
 * SQL expression: the summary ({@link summaryLineSql}) of the server's own message of the attempt aliased `a` (its
 * last error that has one), else of our error text (`etl.attempts.error`), which starts with our own prefix.
 */
export function firstErrorLine(a: string): string {
  return `coalesce((SELECT ${summaryLineSql('e.server_message')} FROM etl.run_errors e
    WHERE e.attempt_id = ${a}.attempt_id AND e.server_message IS NOT NULL ORDER BY e.id DESC LIMIT 1), ${summaryLineSql(`${a}.error`)})`;
}

/** One attempt in a list: the etl.attempts row plus the first line of its error (the server's words first, see {@link firstErrorLine}). */
export interface AttemptListRow extends AttemptRow {
  error_first_line: string | null;
}

/** Filter of {@link listAttempts}. */
export interface AttemptFilter {
  job?: string | undefined;
  status?: string | undefined;
  /** Attempts started at or after this instant. */
  since?: Date | undefined;
  /** Most rows (default 100). */
  limit?: number | undefined;
}

/** Attempts, newest first (`report-etl runs --attempts`). */
export async function listAttempts(db: Queryable, f: AttemptFilter = {}): Promise<AttemptListRow[]> {
  const { rows } = await db.query<AttemptListRow>(
    `SELECT a.*, ${firstErrorLine('a')} AS error_first_line
       FROM etl.attempts a
      WHERE ($1::text IS NULL OR a.job = $1) AND ($2::text IS NULL OR a.status = $2) AND ($3::timestamptz IS NULL OR a.started_at >= $3)
      ORDER BY a.started_at DESC
      LIMIT $4`,
    [f.job ?? null, f.status ?? null, f.since ?? null, f.limit ?? 100],
  );
  return rows;
}

/** The attempts of one logical run (job and run key), newest first (at most 50), each with its first error line. */
export async function attemptsOfRun(db: Queryable, job: string, runKey: string): Promise<AttemptListRow[]> {
  const { rows } = await db.query<AttemptListRow>(
    `SELECT a.*, ${firstErrorLine('a')} AS error_first_line FROM etl.attempts a WHERE a.job = $1 AND a.run_key = $2 ORDER BY a.attempt DESC, a.started_at DESC LIMIT 50`,
    [job, runKey],
  );
  return rows;
}

/** One row of etl.run_errors as the attempt page shows it; `problem` and `details` are the parsed jsonb. */
export interface RunErrorRow {
  id: string;
  occurred_at: Date;
  stage: string;
  error_kind: string;
  retryable: boolean;
  http_status: number | null;
  message: string;
  server_message: string | null;
  problem: unknown;
  details: unknown;
}

/** Every error recorded for one attempt, oldest first. */
export async function listRunErrors(db: Queryable, attemptId: string): Promise<RunErrorRow[]> {
  const { rows } = await db.query<RunErrorRow>(
    'SELECT * FROM etl.run_errors WHERE attempt_id = $1 ORDER BY occurred_at, id',
    [attemptId],
  );
  return rows;
}

/**
 * The attempt of a run whose load committed: its first succeeded one (a later one can only have found the rows
 * already appended). Its documents are the run's (`report-etl documents <run key>`).
 */
export async function loadingAttemptOf(db: Queryable, job: string, runKey: string): Promise<string | undefined> {
  const { rows } = await db.query<{ attempt_id: string }>(
    `SELECT attempt_id FROM etl.attempts WHERE job = $1 AND run_key = $2 AND status = 'succeeded' ORDER BY attempt, started_at LIMIT 1`,
    [job, runKey],
  );
  return rows[0]?.attempt_id;
}
