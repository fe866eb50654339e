/**
 * Backfill (issue 4 "Run parameters and backfill"): one run per schedule interval in a range, each with its own
 * logical time (`%{logicalStart}` = the previous tick, `%{logicalEnd}` = the tick), queued with the same id a
 * scheduled run of that tick gets, so a tick is never run twice by backfill and schedule.
 */
import type { Queue } from 'bullmq';
import type { EtlConfig } from '../config/schema.ts';
import { resolveJob } from '../config/load.ts';
import { ConfigError } from '../errors.ts';
import { cronTicks, MAX_TICKS } from '../config/cron-ticks.ts';
import type { RunQueue } from './queue.ts';
import { enqueueTick } from './scheduler.ts';

/** What a backfill queued. */
export interface BackfillResult {
  /** Every tick of the range, oldest first, with its job id and whether this call queued it. */
  runs: { tick: Date; jobId: string; added: boolean }[];
}

/**
 * Queues the ticks t of `job`'s schedule with from < t <= to (each run covers the interval ending at its tick).
 * @throws ConfigError for an unknown job, a job without schedule, an empty or reversed range, or more than
 *   {@link MAX_TICKS} ticks
 */
export async function backfill(deps: { queue: RunQueue; config: EtlConfig }, job: string, from: Date, to: Date): Promise<BackfillResult> {
  const r = resolveJob(deps.config, job);
  if (!r.job.schedule) throw new ConfigError([`jobs.${job} has no schedule: backfill needs one to know the intervals (use enqueue for a manual run)`]);
  if (!(to.getTime() > from.getTime())) throw new ConfigError([`backfill range is empty: --to (${to.toISOString()}) must be after --from (${from.toISOString()})`]);
  const ticks = cronTicks(r.job.schedule, r.zone);
  const found = ticks.between(from, to, MAX_TICKS);
  if (found.truncated) throw new ConfigError([`backfill range has more than ${MAX_TICKS} ticks of "${r.job.schedule}": split it`]);
  const runs: BackfillResult['runs'] = [];
  for (const tick of found.ticks) {
    const { jobId, added } = await enqueueTick(deps.queue, deps.config, job, tick, 'backfill');
    runs.push({ tick, jobId, added });
  }
  return { runs };
}
