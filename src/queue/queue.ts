/**
 * The BullMQ queue of runs (docs/architecture.md "Flow of one run"): a run is added under a deterministic id, so
 * that the same logical run is queued once however many processes ask.
 */
import { randomUUID } from 'node:crypto';
import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import type { EtlConfig } from '../config/schema.ts';
import type { Queryable } from '../db.ts';
import { forgetQueuedRun, recordQueuedRun } from '../history/runs.ts';
import {
  ATTR,
  injectTrace,
  runTracer,
  SpanKind,
  failSpan,
  startSpan,
  extractTrace,
  type TraceCarrier,
} from '../tracing.ts';
import type { RunRequest } from '../vocabulary.ts';
import { DEFAULT_QUEUE_PREFIX, QUEUE_NAME } from './names.ts';
import { jobOfSubject } from '../config/mandants.ts';

/** How long finished queue jobs stay, in s: a kept id blocks a second enqueue of the same tick. */
export const KEEP_COMPLETED_S = 7 * 86_400;
/** How long failed queue jobs stay, in s, for bull-board's retry button and `replay`. */
const KEEP_FAILED_S = 30 * 86_400;

/**
 * BullMQ serves every job without a priority (scheduled, caught-up, manual runs) before any with one, and one priority
 * first in, first out: backfills and replays run in order without holding back ticks (docs/architecture.md "A fleet").
 */
const BACKFILL_PRIORITY = 10;

/** One queued run: the request, and the trace context of its `enqueue run` span (docs/observability.md "Tracing"). */
export interface QueuedRun extends RunRequest, TraceCarrier {
  /** Random id of the enqueue call, to tell whether the add created the queue job or found it. */
  enqueueId?: string;
}

/** The BullMQ queue of runs. */
export type RunQueue = Queue<QueuedRun>;

/** The queue of runs; `connection` an ioredis instance (not closed by the queue) or ioredis options. */
export function makeQueue(connection: ConnectionOptions, prefix: string = DEFAULT_QUEUE_PREFIX): RunQueue {
  return new Queue<QueuedRun>(QUEUE_NAME, { connection, prefix });
}

/** The attributes of a queued run's `enqueue run` and `process run` spans (docs/observability.md "Tracing"). */
export function queuedRunAttributes(req: RunRequest, queueJobId: string, operation: 'send' | 'process') {
  return {
    [ATTR.job]: req.job,
    [ATTR.runKey]: req.runKey,
    [ATTR.trigger]: req.trigger,
    [ATTR.queueJobId]: queueJobId,
    'messaging.system': 'bullmq',
    'messaging.destination.name': QUEUE_NAME,
    'messaging.operation.type': operation,
  };
}

/** Options of {@link enqueueRun}. */
export interface EnqueueOptions {
  /** Default the run key. */
  jobId?: string;
  /** Attempts in all (default 1). */
  attempts?: number;
  /** First retry delay in ms, doubling. */
  backoffMs?: number;
  /**
   * The run history: a run this call adds gets its etl.runs row now, `queued_at` set and no attempt, so that a run
   * whose queue job vanishes before a worker begins it is still on record (docs/operations.md "Redis in production").
   */
  history?: Queryable | undefined;
}

/** Attempts and backoff of a job (job.retry, else defaults.retry). */
export function retryOf(config: EtlConfig, job: string): { attempts: number; backoffMs: number } {
  const retry = jobOfSubject(config, job)?.retry ?? config.defaults.retry;
  return { attempts: retry.attempts, backoffMs: retry.backoffMs };
}

/**
 * Adds a run unless a queue job with its id exists (BullMQ then changes nothing), traced as `enqueue run`, a child
 * of the active span, whose context goes with the run; with `opts.history`, records the run it added as queued.
 * @returns the id, and whether this call created the queue job
 * @throws the database's error before anything is queued, or the queue's (a row recorded for a run not queued is
 *   the janitor's to mark lost)
 */
export async function enqueueRun(
  queue: RunQueue,
  req: RunRequest,
  opts: EnqueueOptions = {},
): Promise<{ jobId: string; added: boolean }> {
  const jobId = opts.jobId ?? req.runKey;
  const span = startSpan(runTracer(), 'enqueue run', extractTrace(undefined), {
    kind: SpanKind.PRODUCER,
    attributes: queuedRunAttributes(req, jobId, 'send'),
  });
  try {
    const enqueueId = randomUUID();
    const jobOpts: JobsOptions = {
      jobId,
      attempts: opts.attempts ?? 1,
      removeOnComplete: { age: KEEP_COMPLETED_S },
      removeOnFail: { age: KEEP_FAILED_S },
    };
    if (req.trigger === 'backfill' || req.trigger === 'replay') jobOpts.priority = BACKFILL_PRIORITY;
    if (opts.backoffMs) jobOpts.backoff = { type: 'exponential', delay: opts.backoffMs };
    // The row first: a worker may take the queue job at once and, skipping it (overlap: skip), forget the row; a row
    // written after that would read as a lost run.
    const recorded = opts.history
      ? await recordQueuedRun(opts.history, { ...req, queueJobId: jobId, queuedAt: new Date() })
      : false;
    await queue.add(req.job, { ...req, ...injectTrace(span), enqueueId }, jobOpts);
    const queued = await queue.getJob(jobId);
    const added = queued?.data.enqueueId === enqueueId;
    // Not added (a queue job of that id was there): the row written for it goes again.
    if (recorded && !added) await forgetQueuedRun(opts.history!, req.job, req.runKey);
    span.setAttribute(ATTR.queueAdded, added);
    span.end();
    return { jobId, added };
  } catch (err) {
    failSpan(span, err);
    throw err;
  }
}
