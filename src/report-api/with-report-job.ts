/** A report job as a scoped resource (docs/report-export-service.md "What the service does" 3). */
import { coerceError } from '../errors.ts';
import { silentLogger, type Logger } from '../logger.ts';
import type { FinishedReport, ReportClient, StartReportRequest } from './types.ts';

/** Options of {@link withReportJob}. */
interface ReportJobScope {
  /** Aborts the wait and `fn`; the DELETE still runs. */
  signal?: AbortSignal | undefined;
  logger?: Logger;
}

/**
 * Starts the report, waits until it finished, runs `fn`, and deletes the job in every outcome. A failing DELETE is
 * logged with the job id, not thrown: the outcome of the work stands (a committed load stays committed).
 * @returns what `fn` returned
 * @throws whatever startReport, waitForJob or `fn` threw
 */
export async function withReportJob<T>(
  client: ReportClient,
  req: StartReportRequest,
  fn: (finished: FinishedReport) => Promise<T>,
  scope: ReportJobScope = {},
): Promise<T> {
  const job = await client.startReport(req, scope.signal);
  const startedAt = Date.now();
  try {
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
