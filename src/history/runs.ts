/**
 * Logical runs (`etl.runs`, migrations/0008; docs/architecture.md "Vocabulary": a run is named by its run key, an
 * attempt is one try of it): one row per (job, run key) with what the run was asked to do and how it stands. The
 * request part is written here when a worker takes a queued run; the attempt count, status, times and rows are
 * written by the attempt statements of attempts.ts. Replays read the request back to run the same logical run again.
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
  /** When the run was put on the queue (the queue job's timestamp). */
  queuedAt?: Date | undefined;
}

/**
 * Records the request of a logical run: makes its etl.runs row (no attempt yet: the first one may still wait for a
 * report slot), or fills in the request of a row that has none. The first request wins: a retry or replay of the
 * run changes nothing.
 */
export async function recordRunRequest(db: Queryable, r: RunRequestRow): Promise<void> {
  await db.query(
    `INSERT INTO etl.runs AS run (job, run_key, queue_job_id, trigger, scheduled_for, logical_start, logical_end, parameters, queued_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (job, run_key) DO UPDATE
       SET queue_job_id = excluded.queue_job_id, logical_start = excluded.logical_start, logical_end = excluded.logical_end,
           parameters = excluded.parameters, scheduled_for = coalesce(run.scheduled_for, excluded.scheduled_for),
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

/** Reads the request of a logical run, or undefined (runs made by `run` in the foreground have none). */
export async function getRunRequest(db: Queryable, job: string, runKey: string): Promise<RunRequestRow | undefined> {
  const r = await getRun(db, job, runKey);
  if (!r || r.queue_job_id === null) return undefined;
  return {
    job,
    runKey,
    queueJobId: r.queue_job_id,
    trigger: r.trigger,
    scheduledFor: r.scheduled_for ?? undefined,
    logicalStart: r.logical_start ?? undefined,
    logicalEnd: r.logical_end ?? undefined,
    parameters: r.parameters ?? undefined,
  };
}

/** One etl.runs row: a logical run. Counts and figures come back as pg returns them (bigint as text). */
export interface RunRow {
  job: string;
  run_key: string;
  trigger: RunTrigger;
  scheduled_for: Date | null;
  logical_start: Date | null;
  logical_end: Date | null;
  parameters: Record<string, string> | null;
  queue_job_id: string | null;
  /** When a worker began the run (its first take off the queue), or its first attempt in the foreground. */
  created_at: Date;
  /** When the run was put on the queue; null for a foreground run (and runs recorded before migration 0016). */
  queued_at: Date | null;
  /** Attempts made so far (the newest one's number); 0 while the first waits for a report slot. */
  attempts: number;
  /** The newest attempt's status; null before the first attempt. */
  status: AttemptStatus | null;
  first_started_at: Date | null;
  last_finished_at: Date | null;
  /** Rows of the run's first succeeded attempt; null until one succeeded. */
  rows: string | null;
}

/** Reads one logical run, or undefined. */
export async function getRun(db: Queryable, job: string, runKey: string): Promise<RunRow | undefined> {
  const { rows } = await db.query<RunRow>('SELECT * FROM etl.runs WHERE job = $1 AND run_key = $2', [job, runKey]);
  return rows[0];
}

/**
 * The logical runs with this run key, of any job or of `job` only. Run keys are unique per job; the ones report-etl
 * makes name their job or are UUIDs, so more than one row means someone chose the same `run --run-key` for two jobs.
 */
export async function findRunsByKey(db: Queryable, runKey: string, job?: string): Promise<RunRow[]> {
  const { rows } = await db.query<RunRow>(
    'SELECT * FROM etl.runs WHERE run_key = $1 AND ($2::text IS NULL OR job = $2) ORDER BY job LIMIT 20',
    [runKey, job ?? null],
  );
  return rows;
}
