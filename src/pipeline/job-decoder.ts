/**
 * The page decoder of a jobs.yaml job: its output type with the job's options (maxValueBytes, rowsAt, load: rows,
 * the archived documents' file names), made the same way for a run and for a preview.
 */
import type { ResolvedJob } from '../config/load.ts';
import { documentFileName, makePageDecoder, type PageDecoder } from '../pages/decoder.ts';
import { isDocumentType } from '../vocabulary.ts';
import { requestMandant } from '../config/mandants.ts';

/**
 * A fresh decoder for one report job of `job`.
 * @param runTime the attempt's start, in document file names (`<report>_<mandant>_<run time>_<page>.<ext>`)
 */
export function jobDecoder(job: ResolvedJob, runTime: Date): PageDecoder {
  const { report, target } = job.job;
  const type = report.outputType;
  return makePageDecoder(type, {
    maxValueBytes: report.maxValueBytes,
    rowsAt: target.rowsAt,
    load: target.load,
    fileName: isDocumentType(type)
      ? (page) =>
          documentFileName({ report: report.name, mandant: requestMandant(job.name, job.job), runTime, page, type })
      : undefined,
  });
}
