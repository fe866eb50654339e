/** A manual run through the queue (`report-etl enqueue`): a new run key, and parameters that override jobs.yaml's. */
import { randomUUID } from 'node:crypto';
import type { EtlConfig } from '../config/schema.ts';
import { resolveJob } from '../config/load.ts';
import { previousTick } from '../pipeline/logical-time.ts';
import { manualQueueJobId } from './names.ts';
import { enqueueRun, retryOf, type RunQueue } from './queue.ts';
import type { RunRequest } from '../vocabulary.ts';

/**
 * Queues a manual run of `job` with the logical time `now` (its interval from the schedule's previous tick).
 * @throws ConfigError for an unknown job
 */
export async function enqueueManual(
  queue: RunQueue,
  config: EtlConfig,
  job: string,
  parameters: Record<string, string> = {},
  now = new Date(),
): Promise<{ jobId: string; runKey: string }> {
  const r = resolveJob(config, job);
  const runKey = randomUUID();
  const req: RunRequest = { job, trigger: 'manual', runKey, logicalEnd: now.toISOString() };
  const previous = previousTick(r, now);
  if (previous) req.logicalStart = previous.toISOString();
  if (Object.keys(parameters).length) req.parameters = parameters;
  const { jobId } = await enqueueRun(queue, req, { jobId: manualQueueJobId(job, runKey), ...retryOf(config, job) });
  return { jobId, runKey };
}
