/** Lists of attempts (etl.attempts, etl.run_errors) for `runs --attempts`, the admin pages and the overview. */
import type { Queryable } from '../db.ts';
import type { AttemptRow } from './attempts.ts';

/**
 * SQL: the first meaningful line of failure text `t`: its first non-blank line, joined with the next one when it
 * ends in ':' ("Report execution failed:"). failure-text.ts says the same in TypeScript.
 */
export function summaryLineSql(t: string): string {
  return `(SELECT CASE WHEN m[1] LIKE '%:' AND m[2] IS NOT NULL THEN m[1] || ' ' || m[2] ELSE m[1] END
     FROM regexp_match(${t}, '^\\s*([^\\n]*\\S)[ \\t\\r]*(?:\\n\\s*([^\\n]*\\S))?') AS m)`;
}

/** SQL: the summary line of attempt `a`'s last server message, else of its own error text. */
export function firstErrorLine(a: string): string {
  return `coalesce((SELECT ${summaryLineSql('e.server_message')} FROM etl.run_errors e
    WHERE e.attempt_id = ${a}.attempt_id AND e.server_message IS NOT NULL ORDER BY e.id DESC LIMIT 1),
    ${summaryLineSql(`${a}.error`)})`;
}

/** An etl.attempts row with its {@link firstErrorLine}. */
export interface AttemptListRow extends AttemptRow {
  error_first_line: string | null;
}

/**
 * SQL: `p` is NULL, or job column `col` is job `p` or one of its mandants' `p[…]` (docs/loaded-tables.md "Many
 * mandants"). The mandants' as a LIKE prefix with `p`'s wildcards escaped (`a_b` takes in `a_b[1]`, not `axb[1]`),
 * which the `text_pattern_ops` indexes of migration 0027 serve as a range of the index.
 */
export function jobFilterSql(col: string, p: string): string {
  const literal = `replace(replace(replace(${p}, '\\', '\\\\'), '%', '\\%'), '_', '\\_')`;
  return `(${p}::text IS NULL OR ${col} = ${p} OR ${col} LIKE ${literal} || '[%')`;
}

/** A row of a list, with how many rows match the list's filter without its limit. */
export type Counted<T> = T & { matching: number };

/** Filter of {@link listAttempts} and run-list.ts listRuns. */
export interface ListFilter {
  job?: string | undefined;
  /** A run's newest attempt's. */
  status?: string | undefined;
  /** Attempts started, runs made (taken by a worker, or first attempt started), since. */
  since?: Date | undefined;
  /** Default 100. */
  limit?: number | undefined;
}

/** Attempts, newest first (`report-etl runs --attempts`); a job's filter takes in its mandants' attempts. */
export async function listAttempts(db: Queryable, f: ListFilter = {}): Promise<Counted<AttemptListRow>[]> {
  const { rows } = await db.query<Counted<AttemptListRow>>(
    `SELECT a.*, ${firstErrorLine('a')} AS error_first_line, (count(*) OVER ())::int AS matching
       FROM etl.attempts a
      WHERE ${jobFilterSql('a.job', '$1')}
        AND ($2::text IS NULL OR a.status = $2) AND ($3::timestamptz IS NULL OR a.started_at >= $3)
      ORDER BY a.started_at DESC
      LIMIT $4`,
    [f.job ?? null, f.status ?? null, f.since ?? null, f.limit ?? 100],
  );
  return rows;
}

/** The attempts of one logical run, newest first (at most 50). */
export async function attemptsOfRun(db: Queryable, job: string, runKey: string): Promise<AttemptListRow[]> {
  const { rows } = await db.query<AttemptListRow>(
    `SELECT a.*, ${firstErrorLine('a')} AS error_first_line FROM etl.attempts a
      WHERE a.job = $1 AND a.run_key = $2 ORDER BY a.attempt DESC, a.started_at DESC LIMIT 50`,
    [job, runKey],
  );
  return rows;
}

/** One etl.run_errors row; `problem` and `details` parsed. */
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

/** The attempt whose load committed a run: its first succeeded one (its documents are the run's). */
export async function loadingAttemptOf(db: Queryable, job: string, runKey: string): Promise<string | undefined> {
  const { rows } = await db.query<{ attempt_id: string }>(
    `SELECT attempt_id FROM etl.attempts WHERE job = $1 AND run_key = $2 AND status = 'succeeded'
      ORDER BY attempt, started_at LIMIT 1`,
    [job, runKey],
  );
  return rows[0]?.attempt_id;
}
