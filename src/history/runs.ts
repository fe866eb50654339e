/**
 * Logical runs, etl.runs (docs/architecture.md "Vocabulary"; docs/observability.md "Run history"). The request columns
 * are written here when a worker takes a queued run; the status columns by the attempt statements of attempts.ts.
 */
import type { Queryable } from '../db.ts';
import { jobFilterSql } from './attempt-list.ts';
import type { AttemptStatus, RunTrigger } from '../vocabulary.ts';

/** What a queued logical run was asked to do: the request columns of its etl.runs row; times as Dates or ISO 8601. */
export interface RunRequestRow {
  job: string;
  runKey: string;
  /** The BullMQ job id that carried the first attempt. */
  queueJobId: string;
  trigger: RunTrigger;
  scheduledFor?: Date | string | undefined;
  logicalStart?: Date | string | undefined;
  logicalEnd?: Date | string | undefined;
  parameters?: Record<string, string> | undefined;
  /** The queue job's timestamp. */
  queuedAt?: Date | undefined;
}

/** The columns of a run request, in the order of {@link REQUEST_INSERT}'s parameters. */
function requestValues(r: RunRequestRow): unknown[] {
  return [
    r.job,
    r.runKey,
    r.queueJobId,
    r.trigger,
    r.scheduledFor ?? null,
    r.logicalStart ?? null,
    r.logicalEnd ?? null,
    r.parameters ? JSON.stringify(r.parameters) : null,
    r.queuedAt ?? null,
  ];
}

/** SQL: inserts a run request; its ON CONFLICT clause follows. */
const REQUEST_INSERT = `INSERT INTO etl.runs AS run (job, run_key, queue_job_id, trigger, scheduled_for, logical_start,
                                  logical_end, parameters, queued_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`;

/**
 * Records the request of a logical run as a worker takes it, making its row (its first attempt may still wait for a
 * report slot) or filling in a row without one. The first request wins: a retry or replay changes nothing. A row
 * its enqueue made ({@link recordQueuedRun}) and no attempt yet gets `created_at` now: when a worker began it.
 */
export async function recordRunRequest(db: Queryable, r: RunRequestRow): Promise<void> {
  await db.query(
    `${REQUEST_INSERT}
     ON CONFLICT (job, run_key) DO UPDATE
       SET queue_job_id = excluded.queue_job_id, logical_start = excluded.logical_start,
           logical_end = excluded.logical_end, parameters = excluded.parameters,
           scheduled_for = coalesce(run.scheduled_for, excluded.scheduled_for),
           queued_at = coalesce(run.queued_at, excluded.queued_at),
           created_at = CASE WHEN run.queue_job_id IS NULL THEN run.created_at ELSE now() END
       WHERE run.queue_job_id IS NULL OR (run.queue_job_id = excluded.queue_job_id AND run.attempts = 0)`,
    requestValues(r),
  );
}

/**
 * Records a run before its enqueue adds its queue job: its row with `queued_at` and no attempt, so that a run whose
 * queue job vanishes before a worker begins it is still on record (docs/operations.md "Redis in production"). A row
 * that exists already (a replay's run) is left as it is.
 * @returns whether it wrote the row (false: one was there), so that an enqueue that added no queue job takes it back
 */
export async function recordQueuedRun(db: Queryable, r: RunRequestRow): Promise<boolean> {
  const { rowCount } = await db.query(`${REQUEST_INSERT} ON CONFLICT (job, run_key) DO NOTHING`, requestValues(r));
  return rowCount === 1;
}

/** One etl.runs row (docs/observability.md "Run history"); bigints as text. */
export interface RunRow {
  job: string;
  run_key: string;
  trigger: RunTrigger;
  scheduled_for: Date | null;
  logical_start: Date | null;
  logical_end: Date | null;
  parameters: Record<string, string> | null;
  /** Null for a foreground run until it is replayed. */
  queue_job_id: string | null;
  created_at: Date;
  queued_at: Date | null;
  /** 0 while the first attempt waits for a report slot. */
  attempts: number;
  /** The newest attempt's; null before the first. */
  status: AttemptStatus | null;
  first_started_at: Date | null;
  last_finished_at: Date | null;
  /** Of the first succeeded attempt. */
  rows: string | null;
}

/** Reads one logical run, or undefined. */
export async function getRun(db: Queryable, job: string, runKey: string): Promise<RunRow | undefined> {
  const { rows } = await db.query<RunRow>('SELECT * FROM etl.runs WHERE job = $1 AND run_key = $2', [job, runKey]);
  return rows[0];
}

/**
 * The logical runs with this run key, of any job or of `job` only (a job with a list of mandants standing for its
 * mandants' runs, docs/loaded-tables.md "Many mandants"). More than one means someone chose the same
 * `run --run-key` for two jobs: the keys report-etl makes name their job or are UUIDs.
 */
export async function findRunsByKey(db: Queryable, runKey: string, job?: string): Promise<RunRow[]> {
  const { rows } = await db.query<RunRow>(
    `SELECT * FROM etl.runs
      WHERE run_key = $1 AND ${jobFilterSql('job', '$2')} ORDER BY job LIMIT 20`,
    [runKey, job ?? null],
  );
  return rows;
}

/**
 * The runs of `jobs` queued before `before` that no worker has begun (no attempt, a queue job id, `queued_at` set):
 * the janitor's candidates for runs whose queue job vanished (docs/operations.md "Redis in production").
 */
export async function queuedRunsNotBegun(db: Queryable, jobs: readonly string[], before: Date): Promise<RunRow[]> {
  const { rows } = await db.query<RunRow>(
    `SELECT * FROM etl.runs
      WHERE job = ANY($1::text[]) AND attempts = 0 AND status IS NULL AND queue_job_id IS NOT NULL
        AND queued_at < $2
      ORDER BY queued_at LIMIT 500`,
    [jobs, before],
  );
  return rows;
}

/**
 * Deletes the row {@link recordQueuedRun} made for a run a worker finished without an attempt (skipped under
 * `overlap: skip`): no attempt ever stands for it, and its queue job, removed later, must not read as lost.
 */
export async function forgetQueuedRun(db: Queryable, job: string, runKey: string): Promise<void> {
  await db.query('DELETE FROM etl.runs WHERE job = $1 AND run_key = $2 AND attempts = 0 AND status IS NULL', [
    job,
    runKey,
  ]);
}
