/**
 * What each logical run was asked to do (`etl.run_requests`, migrations/0002): one row per (job, run key), the
 * first attempt's request wins. Replays read it back to run the same logical run again.
 */
import type { Queryable } from '../db.ts';
import type { RunTrigger } from '../vocabulary.ts';

/** One etl.run_requests row. */
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
}

/** Stores the request of a logical run unless it is stored already (the first attempt's request wins). */
export async function recordRunRequest(db: Queryable, r: RunRequestRow): Promise<void> {
  await db.query(
    `INSERT INTO etl.run_requests (job, run_key, queue_job_id, trigger, scheduled_for, logical_start, logical_end, parameters)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (job, run_key) DO NOTHING`,
    [r.job, r.runKey, r.queueJobId, r.trigger, r.scheduledFor ?? null, r.logicalStart ?? null, r.logicalEnd ?? null, r.parameters ? JSON.stringify(r.parameters) : null],
  );
}

/** Reads the request of a logical run, or undefined (runs made by `run` in the foreground have none). */
export async function getRunRequest(db: Queryable, job: string, runKey: string): Promise<RunRequestRow | undefined> {
  const { rows } = await db.query<{
    queue_job_id: string;
    trigger: RunTrigger;
    scheduled_for: Date | null;
    logical_start: Date | null;
    logical_end: Date | null;
    parameters: Record<string, string> | null;
  }>('SELECT * FROM etl.run_requests WHERE job = $1 AND run_key = $2', [job, runKey]);
  const r = rows[0];
  if (!r) return undefined;
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
