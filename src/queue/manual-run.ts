/** A manual run through the queue (`report-etl enqueue`): a new run key, and parameters that override jobs.yaml's. */
import { randomUUID } from 'node:crypto';
import type { EtlConfig } from '../config/schema.ts';
import type { Queryable } from '../db.ts';
import { resolveJob } from '../config/load.ts';
import { manualInterval } from '../pipeline/logical-time.ts';
import { manualQueueJobId } from './names.ts';
import { enqueueRun, retryOf, type RunQueue } from './queue.ts';
import type { RunRequest } from '../vocabulary.ts';

/**
 * Queues a manual run of `job` for the latest complete interval of its schedule, or the interval ending at `chosen`
 * (`--logical-time`; pipeline/logical-time.ts manualInterval).
 * @param history records the run as queued when given (queue.ts enqueueRun)
 * @returns the queue job id, the run key and the interval the run stands for
 * @throws ConfigError for an unknown job
 */
export async function enqueueManual(
  queue: RunQueue,
  config: EtlConfig,
  job: string,
  parameters: Record<string, string> = {},
  chosen?: Date,
  now = new Date(),
  history?: Queryable,
): Promise<{ jobId: string; runKey: string; interval: { logicalStart: Date; logicalEnd: Date } }> {
  const interval = manualInterval(resolveJob(config, job), now, chosen);
  const runKey = randomUUID();
  const req: RunRequest = {
    job,
    trigger: 'manual',
    runKey,
    logicalStart: interval.logicalStart.toISOString(),
    logicalEnd: interval.logicalEnd.toISOString(),
  };
  if (Object.keys(parameters).length) req.parameters = parameters;
  const { jobId } = await enqueueRun(queue, req, {
    jobId: manualQueueJobId(job, runKey),
    ...retryOf(config, job),
    history,
  });
  return { jobId, runKey, interval };
}
