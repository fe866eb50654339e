/**
 * Run history (DESIGN.md "Run history"): each SQL operation on etl.runs / etl.run_errors as one small typed
 * function (CONVENTIONS.md, graphile-worker `src/sql/*`). A run is recorded `running` when it starts, then
 * `succeeded` inside the loading transaction, or `failed` after the load rolled back.
 */
import type pg from 'pg';
import { EtlError } from '../errors.ts';
import type { AttemptStatus, RunStage, RunTrigger } from '../vocabulary.ts';

/** Something that runs SQL: a pool or a checked-out client. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

/** What is known when an attempt starts. */
export interface RunStart {
  runId: string;
  job: string;
  runKey: string;
  scheduledFor?: Date | undefined;
  trigger: RunTrigger;
  attempt: number;
  targetTable: string;
  writeMode: string;
  worker: string;
}

/** Inserts the `running` row of an attempt. */
export async function insertRun(db: Queryable, r: RunStart): Promise<void> {
  await db.query(
    `INSERT INTO etl.runs (run_id, job, run_key, scheduled_for, trigger, attempt, status, target_table, write_mode, worker)
     VALUES ($1, $2, $3, $4, $5, $6, 'running', $7, $8, $9)`,
    [r.runId, r.job, r.runKey, r.scheduledFor ?? null, r.trigger, r.attempt, r.targetTable, r.writeMode, r.worker],
  );
}

/** Stores the server's job id as soon as the report job exists, so a later attempt can delete a leftover. */
export async function setRunReportJob(db: Queryable, runId: string, reportJobId: string): Promise<void> {
  await db.query('UPDATE etl.runs SET report_job_id = $2 WHERE run_id = $1', [runId, reportJobId]);
}

/** Figures of a finished load. */
export interface RunFigures {
  rows: number;
  pages: number;
  bytes: number;
}

/**
 * Marks an attempt succeeded; called inside the loading transaction so it commits with the rows.
 * @returns false when the attempt is no longer `running`: a later attempt declared it dead (it stalled past its
 *   lock) and took the run over, so this one must not commit
 */
export async function completeRun(db: Queryable, runId: string, f: RunFigures): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE etl.runs SET status = 'succeeded', rows = $2, pages = $3, bytes = $4, finished_at = clock_timestamp(),
            duration_ms = (extract(epoch FROM clock_timestamp() - started_at) * 1000)::bigint, error = NULL
      WHERE run_id = $1 AND status = 'running'`,
    [runId, f.rows, f.pages, f.bytes],
  );
  return (rowCount ?? 0) > 0;
}

/** What is recorded of a failure; `message` is ours, `serverMessage` and `problem` the server's, verbatim. */
export interface RunFailure {
  status: 'failed' | 'interrupted';
  stage: RunStage;
  errorKind: string;
  retryable: boolean;
  message: string;
  httpStatus?: number | undefined;
  serverMessage?: string | undefined;
  problem?: unknown;
  details?: Record<string, unknown> | undefined;
  figures?: Partial<RunFigures>;
}

/**
 * Marks an attempt failed (or interrupted) and writes its etl.run_errors row, in one transaction. An attempt that
 * is no longer `running` keeps its status (a later attempt already recorded it interrupted); the error row is
 * still written.
 */
export async function failRun(pool: pg.Pool, runId: string, f: RunFailure): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(
      `UPDATE etl.runs SET status = $2, error = $3, rows = $4, pages = $5, bytes = $6, finished_at = clock_timestamp(),
              duration_ms = (extract(epoch FROM clock_timestamp() - started_at) * 1000)::bigint
        WHERE run_id = $1 AND status = 'running'`,
      [runId, f.status, f.serverMessage && !f.message.includes(f.serverMessage) ? `${f.message}\n${f.serverMessage}` : f.message, f.figures?.rows ?? null, f.figures?.pages ?? null, f.figures?.bytes ?? null],
    );
    await client.query(
      `INSERT INTO etl.run_errors (run_id, stage, error_kind, retryable, http_status, message, server_message, problem, details)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [
        runId,
        f.stage,
        f.errorKind,
        f.retryable,
        f.httpStatus ?? null,
        f.message,
        f.serverMessage ?? null,
        f.problem === undefined ? null : JSON.stringify(f.problem),
        f.details === undefined ? null : JSON.stringify(f.details),
      ],
    );
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** Turns any error into the failure record of a run. */
export function failureOf(err: Error, fallbackStage: RunStage, figures?: Partial<RunFigures>): RunFailure {
  const e = err instanceof EtlError ? err : undefined;
  return {
    status: e?.code === 'ABORTED' ? 'interrupted' : 'failed',
    stage: e?.stage ?? fallbackStage,
    errorKind: e?.code ?? ((err as { code?: unknown }).code ? `PG_${String((err as { code?: unknown }).code)}` : 'INTERNAL'),
    retryable: e?.retryable ?? false,
    message: err.message,
    httpStatus: e?.httpStatus,
    serverMessage: e?.serverMessage,
    problem: e?.problem,
    details: e?.details,
    figures,
  };
}

/** One row of etl.runs as the CLI and admin pages read it. */
export interface RunRow {
  run_id: string;
  job: string;
  run_key: string;
  scheduled_for: Date | null;
  trigger: RunTrigger;
  attempt: number;
  status: AttemptStatus;
  report_job_id: string | null;
  target_table: string;
  write_mode: string;
  rows: string | null;
  pages: number | null;
  bytes: string | null;
  started_at: Date;
  finished_at: Date | null;
  duration_ms: string | null;
  error: string | null;
}

/** Reads one run by id, or undefined. */
export async function getRun(db: Queryable, runId: string): Promise<RunRow | undefined> {
  const { rows } = await db.query<RunRow>('SELECT * FROM etl.runs WHERE run_id = $1', [runId]);
  return rows[0];
}

/** Whether rows of this logical run were already appended (etl.appended_runs). */
export async function isAppended(db: Queryable, job: string, runKey: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM etl.appended_runs WHERE job = $1 AND run_key = $2', [job, runKey]);
  return (rowCount ?? 0) > 0;
}

/**
 * Claims (job, runKey) for an append inside the loading transaction.
 * @returns false when another attempt already committed this logical run (the caller rolls back)
 */
export async function claimAppend(db: Queryable, job: string, runKey: string, runId: string, targetTable: string, rows: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO etl.appended_runs (job, run_key, run_id, target_table, rows) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (job, run_key) DO NOTHING`,
    [job, runKey, runId, targetTable, rows],
  );
  return (rowCount ?? 0) > 0;
}
