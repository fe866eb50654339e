/**
 * The BullMQ queue of runs (docs/architecture.md "Flow of one run"): what a queued run carries, and adding one with a
 * deterministic id so that the same logical run is queued once however many processes ask.
 */
import { randomUUID } from 'node:crypto';
import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import type { EtlConfig } from '../config/schema.ts';
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
import type { RunRequest, RunTrigger } from '../vocabulary.ts';
import { DEFAULT_QUEUE_PREFIX, QUEUE_NAME } from './names.ts';

/** How long finished jobs stay in Redis, in s. A kept id blocks a second enqueue of the same tick (7 days). */
export const KEEP_COMPLETED_S = 7 * 86_400;
/** How long failed jobs stay in Redis, in s (30 days), for bull-board's retry button and `replay`. */
export const KEEP_FAILED_S = 30 * 86_400;

/**
 * One queued run (the BullMQ job data): the run request, the id of the enqueue call that added it, and the W3C trace
 * context of its `enqueue run` span (README "Tracing"), which the worker's spans continue; absent when the process
 * that queued it traces nothing.
 */
export interface QueuedRun extends RunRequest, TraceCarrier {
  /** Random id of this enqueue call, to tell whether the add created the queue job or found it. */
  enqueueId?: string;
}

/** The BullMQ queue of runs. */
export type RunQueue = Queue<QueuedRun>;

/**
 * A Queue of {@link QueuedRun}s named {@link QUEUE_NAME}.
 * @param connection an ioredis instance (shared, not closed by the queue) or ioredis options
 * @param prefix BullMQ key prefix (default 'report-etl')
 */
export function makeQueue(connection: ConnectionOptions, prefix: string = DEFAULT_QUEUE_PREFIX): RunQueue {
  return new Queue<QueuedRun>(QUEUE_NAME, { connection, prefix });
}

/** Options of {@link enqueueRun}. */
export interface EnqueueOptions {
  /** BullMQ job id; default the run key (deterministic ids make the add idempotent). */
  jobId?: string;
  /** Attempts in all (default 1). */
  attempts?: number;
  /** First retry delay in ms; doubles each attempt (BullMQ exponential backoff). */
  backoffMs?: number;
  /** Delay before the run may start, in ms. */
  delayMs?: number;
}

/**
 * BullMQ priority of backfilled and replayed runs. BullMQ serves every job without a priority (scheduled, caught-up
 * and manual runs) before any job with one, and jobs of one priority first in, first out: a backfill of a thousand
 * ticks of one job goes on while nothing else waits, in order of its ticks, and never holds back the other jobs'
 * scheduled ticks (docs/architecture.md "A fleet").
 */
export const BACKFILL_PRIORITY = 10;

/** The BullMQ priority of a run by its trigger: 0 (none: first served) or {@link BACKFILL_PRIORITY}. */
export function queuePriorityOf(trigger: RunTrigger): number {
  return trigger === 'backfill' || trigger === 'replay' ? BACKFILL_PRIORITY : 0;
}

/** Attempts and backoff of a job from jobs.yaml (job.retry, else defaults.retry). */
export function retryOf(config: EtlConfig, job: string): { attempts: number; backoffMs: number } {
  const retry = config.jobs[job]?.retry ?? config.defaults.retry;
  return { attempts: retry.attempts, backoffMs: retry.backoffMs };
}

/**
 * Adds a run unless a job with the same id exists (BullMQ keeps custom ids unique: an add with a taken id returns
 * the existing job and changes nothing). Finished jobs are kept {@link KEEP_COMPLETED_S} / {@link KEEP_FAILED_S}
 * so that the id stays taken. Traced as the span `enqueue run` (a child of the active span: a scheduler tick's),
 * whose context goes with the queued run, so that its trace begins here.
 * @returns the job id, and whether this call created it (false: it was queued, running or finished already)
 */
export async function enqueueRun(
  queue: RunQueue,
  req: RunRequest,
  opts: EnqueueOptions = {},
): Promise<{ jobId: string; added: boolean }> {
  const jobId = opts.jobId ?? req.runKey;
  const span = startSpan(runTracer(), 'enqueue run', extractTrace(undefined), {
    kind: SpanKind.PRODUCER,
    attributes: {
      [ATTR.job]: req.job,
      [ATTR.runKey]: req.runKey,
      [ATTR.trigger]: req.trigger,
      [ATTR.queueJobId]: jobId,
      'messaging.system': 'bullmq',
      'messaging.destination.name': QUEUE_NAME,
      'messaging.operation.type': 'send',
    },
  });
  try {
    const added = await addRun(queue, req, jobId, opts, injectTrace(span));
    span.setAttribute(ATTR.queueAdded, added.added);
    span.end();
    return added;
  } catch (err) {
    failSpan(span, err);
    throw err;
  }
}

/** The add of {@link enqueueRun}, with the trace context of its span. */
async function addRun(
  queue: RunQueue,
  req: RunRequest,
  jobId: string,
  opts: EnqueueOptions,
  trace: TraceCarrier,
): Promise<{ jobId: string; added: boolean }> {
  const enqueueId = randomUUID();
  const jobOpts: JobsOptions = {
    jobId,
    attempts: opts.attempts ?? 1,
    removeOnComplete: { age: KEEP_COMPLETED_S },
    removeOnFail: { age: KEEP_FAILED_S },
  };
  const priority = queuePriorityOf(req.trigger);
  if (priority > 0) jobOpts.priority = priority;
  if (opts.backoffMs !== undefined && opts.backoffMs > 0)
    jobOpts.backoff = { type: 'exponential', delay: opts.backoffMs };
  if (opts.delayMs !== undefined && opts.delayMs > 0) jobOpts.delay = opts.delayMs;
  await queue.add(req.job, { ...req, ...trace, enqueueId }, jobOpts);
  const stored = await queue.getJob(jobId);
  return { jobId, added: stored?.data.enqueueId === enqueueId };
}
