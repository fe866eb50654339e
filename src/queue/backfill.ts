/**
 * Backfill: one run per schedule interval in a range, each with its own
 * logical time (`%{logicalStart}` = the previous tick, `%{logicalEnd}` = the tick), queued with the same id a
 * scheduled run of that tick gets, so a tick is never run twice by backfill and schedule. BullMQ keeps a finished
 * run's id for 7 days (KEEP_COMPLETED_S), so a tick that already ran is not queued again: each result says so, with
 * the queue job's state. `force` queues every tick as a new logical run instead (its own queue job id and
 * run key, {@link forcedQueueJobId}): it runs and loads again — an append target gets that tick's rows a second time.
 */
import { randomUUID } from 'node:crypto';
import type { EtlConfig } from '../config/schema.ts';
import { resolveJob } from '../config/load.ts';
import { ConfigError } from '../errors.ts';
import { cronTicks, MAX_TICKS } from '../config/cron-ticks.ts';
import type { ResolvedJob } from '../config/load.ts';
import { previousTick } from '../pipeline/logical-time.ts';
import type { RunRequest } from '../vocabulary.ts';
import { forcedQueueJobId } from './names.ts';
import { enqueueRun, retryOf, type RunQueue } from './queue.ts';
import { enqueueTick } from './scheduler.ts';

/** One tick of a backfill. */
export interface BackfillRun {
  tick: Date;
  /** The BullMQ job id (= run key): `<job>__<tick>`, or `<job>__<tick>__force_<nonce>` when forced. */
  jobId: string;
  /** Whether this call queued it. */
  added: boolean;
  /**
   * When not added: the state of the queue job that holds the id (`completed`, `failed`: already done;
   * `waiting`, `delayed`, `active`, `prioritized`: already queued), or `unknown` when it vanished meanwhile.
   */
  state?: string;
}

/** What a backfill queued. */
export interface BackfillResult {
  /** Every tick of the range, oldest first. */
  runs: BackfillRun[];
  /** The job's schedule time zone (IANA), in which the ticks fall. */
  zone: string;
}

/** Options of {@link backfill}. */
export interface BackfillOptions {
  /** Queue every tick as a new logical run, even one that is queued or done already (default false). */
  force?: boolean;
}

/** Whether a queue job state counts as done (vs still queued or running). */
export function isDoneState(state: string | undefined): boolean {
  return state === 'completed' || state === 'failed';
}

/**
 * Queues the ticks t of `job`'s schedule with from < t <= to (each run covers the interval ending at its tick).
 * @returns every tick with its queue job id and whether it was queued (and if not, the state of the job holding its id)
 * @throws ConfigError for an unknown job, a job without schedule, an empty or reversed range, or more than
 *   {@link MAX_TICKS} ticks
 */
export async function backfill(
  deps: { queue: RunQueue; config: EtlConfig },
  job: string,
  from: Date,
  to: Date,
  o: BackfillOptions = {},
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
  const ticks = cronTicks(r.job.schedule, r.zone);
  const found = ticks.between(from, to, MAX_TICKS);
  if (found.truncated)
    throw new ConfigError([`backfill range has more than ${MAX_TICKS} ticks of "${r.job.schedule}": split it`]);
  const runs: BackfillRun[] = [];
  for (const tick of found.ticks) {
    const { jobId, added } = o.force
      ? await enqueueForced(deps, r, tick)
      : await enqueueTick(deps.queue, deps.config, job, tick, 'backfill');
    const run: BackfillRun = { tick, jobId, added };
    if (!added) run.state = (await (await deps.queue.getJob(jobId))?.getState()) ?? 'unknown';
    runs.push(run);
  }
  return { runs, zone: r.zone };
}

/** Queues `tick` of `job` as a new logical run with the tick's logical time (trigger backfill). */
async function enqueueForced(
  deps: { queue: RunQueue; config: EtlConfig },
  job: ResolvedJob,
  tick: Date,
): Promise<{ jobId: string; added: boolean }> {
  const id = forcedQueueJobId(job.name, tick, randomUUID().slice(0, 8));
  const req: RunRequest = {
    job: job.name,
    trigger: 'backfill',
    scheduledFor: tick.toISOString(),
    logicalEnd: tick.toISOString(),
    runKey: id,
  };
  const previous = previousTick(job, tick);
  if (previous) req.logicalStart = previous.toISOString();
  return enqueueRun(deps.queue, req, { jobId: id, ...retryOf(deps.config, job.name) });
}
