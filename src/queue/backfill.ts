/**
 * Backfill: one run per schedule interval in a range, queued with the id a scheduled run of its tick gets, so that
 * backfill and schedule never both run a tick. A tick already run is not queued again while BullMQ keeps its id
 * (queue.ts KEEP_COMPLETED_S); `force` queues each tick as a new logical run ({@link forcedQueueJobId}) instead,
 * which loads again: an append target gets the tick's rows a second time.
 */
import { randomUUID } from 'node:crypto';
import type { EtlConfig } from '../config/schema.ts';
import type { Queryable } from '../db.ts';
import { resolveJob } from '../config/load.ts';
import { ConfigError } from '../errors.ts';
import { cronTicks, MAX_TICKS } from '../config/cron-ticks.ts';
import { forcedQueueJobId } from './names.ts';
import type { RunQueue } from './queue.ts';
import { enqueueTick } from './scheduler.ts';

/** One tick of a backfill. */
export interface BackfillRun {
  tick: Date;
  /** The queue job id and run key. */
  jobId: string;
  /** Whether this call queued it. */
  added: boolean;
  /** When not added: the state of the queue job holding the id, or `unknown` when it vanished meanwhile. */
  state?: string;
}

/** What a backfill queued: every tick, oldest first, and the zone they fall in. */
export type BackfillResult = { runs: BackfillRun[]; zone: string };

/** Whether a queue job state counts as done (vs still queued or running). */
export function isDoneState(state: string | undefined): boolean {
  return state === 'completed' || state === 'failed';
}

/**
 * Queues the ticks t of `job`'s schedule with from < t <= to, each with the logical interval ending at it.
 * @param deps.history records each run it adds as queued (queue.ts enqueueRun)
 * @param o.force queue every tick as a new logical run, even one queued or done already
 * @throws ConfigError for an unknown job, a job without schedule, an empty range, or over {@link MAX_TICKS} ticks
 */
export async function backfill(
  deps: { queue: RunQueue; config: EtlConfig; history?: Queryable },
  job: string,
  from: Date,
  to: Date,
  o: { force?: boolean } = {},
): Promise<BackfillResult> {
  const r = resolveJob(deps.config, job);
  if (!r.job.schedule)
    throw new ConfigError([
      `jobs.${job} has no schedule: backfill needs one to know the intervals (use enqueue for a manual run)`,
    ]);
  if (!(to.getTime() > from.getTime()))
    throw new ConfigError([
      `backfill range is empty: --to (${to.toISOString()}) must be after --from (${from.toISOString()})`,
    ]);
  const found = cronTicks(r.job.schedule, r.zone).between(from, to, MAX_TICKS);
  if (found.truncated)
    throw new ConfigError([`backfill range has more than ${MAX_TICKS} ticks of "${r.job.schedule}": split it`]);
  const runs: BackfillRun[] = [];
  for (const tick of found.ticks) {
    const id = o.force ? forcedQueueJobId(job, tick, randomUUID().slice(0, 8)) : undefined;
    const { jobId, added } = await enqueueTick(deps.queue, deps.config, job, tick, 'backfill', id, deps.history);
    const run: BackfillRun = { tick, jobId, added };
    if (!added) run.state = (await (await deps.queue.getJob(jobId))?.getState()) ?? 'unknown';
    runs.push(run);
  }
  return { runs, zone: r.zone };
}
