/**
 * A report job as a scoped resource (docs/architecture.md): start it, tell the
 * caller its id, wait until it finished, hand the finished job to `fn`, and DELETE it in every outcome (docs/report-export-service.md "What
 * the service does" 3: start, poll, read, delete).
 */
import { coerceError } from '../errors.ts';
import { silentLogger, type Logger } from '../logger.ts';
import type { FinishedReport, ReportClient, ReportJob, StartReportRequest } from './types.ts';

/** Options of {@link withReportJob}. */
export interface ReportJobScope {
  /** Aborts the wait and whatever `fn` does with it; the DELETE still runs. */
  signal?: AbortSignal | undefined;
  logger?: Logger;
  /**
   * Called with the job as soon as the server created it, before the first status poll, so that the caller can
   * record its id (then a process that dies later leaves a job someone can still delete). A throw here ends the
   * scope like any other failure: the job is deleted.
   */
  onStarted?: (job: ReportJob) => Promise<void>;
}

/**
 * Starts the report, waits until it finished, runs `fn`, and always deletes the job afterwards: on success, on
 * failure (of the report or of `fn`) and on abort. A failing DELETE is logged as a warning with the job id and not
 * thrown: the outcome of the work stands (a committed load stays committed), and the service's description gives no other way to
 * find the job than its id.
 * @returns what `fn` returned
 * @throws whatever startReport (docs/report-export-service.md "Errors": rights failure, 403 …), onStarted, waitForJob (FinishedError, poll
 *   timeout, abort) or `fn` threw
 */
export async function withReportJob<T>(
  client: ReportClient,
  req: StartReportRequest,
  fn: (finished: FinishedReport) => Promise<T>,
  scope: ReportJobScope = {},
): Promise<T> {
  // startReport deletes the job itself when it throws after creating one (rights failure, abort).
  const job = await client.startReport(req, scope.signal);
  const startedAt = Date.now();
  try {
    await scope.onStarted?.(job);
    // The first poll is due pollIntervalMs after the server's answer, not after the id was recorded.
    const finished = await client.waitForJob(job.id, scope.signal, startedAt);
    return await fn(finished);
  } finally {
    await client.deleteJob(job.id).catch((err: unknown) => {
      (scope.logger ?? silentLogger).warn(
        { err: coerceError(err).message, reportJobId: job.id },
        'could not delete the report job',
      );
    });
  }
}
