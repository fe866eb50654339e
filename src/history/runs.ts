/**
 * Logical runs, etl.runs (docs/architecture.md "Vocabulary"; docs/observability.md "Run history"). The request columns
 * are written here when a worker takes a queued run; the status columns by the attempt statements of attempts.ts.
 */
import type { Queryable } from '../db.ts';
import type { AttemptStatus, RunTrigger } from '../vocabulary.ts';

/** What a queued logical run was asked to do: the request columns of its etl.runs row. */
export interface RunRequestRow {
  job: string;
  runKey: string;
  /** The BullMQ job id that carried the first attempt. */
  queueJobId: string;
  trigger: RunTrigger;
  scheduledFor?: Date | undefined;
  logicalStart?: Date | undefined;
  logicalEnd?: Date | undefined;
  parameters?: Record<string, string> | undefined;
  /** The queue job's timestamp. */
  queuedAt?: Date | undefined;
}

/**
 * Records the request of a logical run, making its row (its first attempt may still wait for a report slot) or
 * filling in a row without one. The first request wins: a retry or replay changes nothing.
 */
export async function recordRunRequest(db: Queryable, r: RunRequestRow): Promise<void> {
  await db.query(
    `INSERT INTO etl.runs AS run (job, run_key, queue_job_id, trigger, scheduled_for, logical_start, logical_end,
                                  parameters, queued_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (job, run_key) DO UPDATE
       SET queue_job_id = excluded.queue_job_id, logical_start = excluded.logical_start,
           logical_end = excluded.logical_end, parameters = excluded.parameters,
           scheduled_for = coalesce(run.scheduled_for, excluded.scheduled_for),
           queued_at = coalesce(run.queued_at, excluded.queued_at)
       WHERE run.queue_job_id IS NULL`,
    [
      r.job,
      r.runKey,
      r.queueJobId,
      r.trigger,
      r.scheduledFor ?? null,
      r.logicalStart ?? null,
      r.logicalEnd ?? null,
      r.parameters ? JSON.stringify(r.parameters) : null,
      r.queuedAt ?? null,
    ],
  );
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
 * The logical runs with this run key, of any job or of `job` only. More than one means someone chose the same
 * `run --run-key` for two jobs: the keys report-etl makes name their job or are UUIDs.
 */
export async function findRunsByKey(db: Queryable, runKey: string, job?: string): Promise<RunRow[]> {
  const { rows } = await db.query<RunRow>(
    'SELECT * FROM etl.runs WHERE run_key = $1 AND ($2::text IS NULL OR job = $2) ORDER BY job LIMIT 20',
    [runKey, job ?? null],
  );
  return rows;
}
