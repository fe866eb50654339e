/**
 * A report job as a scoped resource (CONVENTIONS.md "Factories make*, scoped resources with*"):
 * start, wait, hand the finished job to `fn`, and DELETE the job in every outcome (spec "What the
 * service does" 3.4: the job is closed after reading).
 */
import { silentLogger, type Logger } from '../logger.ts';
import type { FinishedReport, ReportClient, StartReportRequest } from './types.ts';

/**
 * Starts the report, waits until it finished, runs `fn`, and always deletes the job afterwards: on
 * success, on failure (of the report or of `fn`) and on abort. A failing DELETE is logged, and only
 * thrown when everything else succeeded.
 * @returns what `fn` returned
 * @throws whatever startReport, waitForJob or `fn` threw (the first error wins over a DELETE error)
 */
export async function withReportJob<T>(
  client: ReportClient,
  req: StartReportRequest,
  signal: AbortSignal | undefined,
  fn: (finished: FinishedReport) => Promise<T>,
  logger: Logger = silentLogger,
): Promise<T> {
  // startReport deletes the job itself when it throws after creating one (rights failure, abort).
  const job = await client.startReport(req, signal);
  let failed = false;
  try {
    const finished = await client.waitForJob(job.id, signal);
    return await fn(finished);
  } catch (err) {
    failed = true;
    throw err;
  } finally {
    try {
      await client.deleteJob(job.id);
    } catch (err) {
      logger.warn({ err, reportJobId: job.id }, 'could not delete the report job');
      // eslint-disable-next-line no-unsafe-finally -- only when nothing else failed
      if (!failed) throw err;
    }
  }
}
