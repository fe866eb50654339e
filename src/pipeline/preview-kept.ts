/**
 * `report-etl preview --from-pages <run>` (docs/operations.md "Kept pages"): what `report-etl preview` shows (the
 * target columns with their types, the first rows, a replaceRange's plan), from the first page a run kept instead of a
 * new rendering: no request to the server. A documents run that loaded keeps its documents in their target instead:
 * the first of those is previewed. The pages are read with the reader `replay --from-pages` loads them with
 * (pipeline/kept-pages.ts), through the same decoders; nothing is loaded (the rows go into a staging table of a
 * transaction that is rolled back) and no run is recorded.
 */
import type pg from 'pg';
import type { ResolvedJob } from '../config/load.ts';
import { EtlError } from '../errors.ts';
import type { AttemptArchive } from '../history/page-archive.ts';
import type { RunDocument } from '../history/run-documents.ts';
import type { Logger } from '../logger.ts';
import { outputShape } from '../vocabulary.ts';
import { resolveDeclaredTypes } from '../warehouse/target-table.ts';
import { jobDecoder } from './job-decoder.ts';
import { documentPages, openKeptPages } from './kept-pages.ts';
import { logicalTimeOf, runRange } from './logical-time.ts';
import { previewInRollback, previewLogger, type JobPreview } from './preview.ts';
import { reportRows } from './report-rows.ts';

/** The documents (pdf, xlsx, docx) an attempt loaded into its target: a documents run's kept pages. */
export interface LoadedDocuments {
  attemptId: string;
  /** history/run-documents.ts listRunDocuments, at least one. */
  docs: readonly RunDocument[];
}

/** Options of {@link previewKeptPages}. */
export interface KeptPreviewOptions {
  /** The run's job as jobs.yaml has it now: its decoder, target and declared types. */
  job: ResolvedJob;
  /** The kept pages to preview (history/page-archive.ts), complete; or the documents a load committed. */
  kept: AttemptArchive | LoadedDocuments;
  /** The run's logical interval (etl.runs), for a replaceRange's plan. */
  interval?: { logicalStart?: Date | undefined; logicalEnd?: Date | undefined } | undefined;
  /** Rows to show (1..1000). */
  rows: number;
  pool: pg.Pool;
  logger: Logger;
  signal?: AbortSignal;
}

/**
 * Previews the first kept page of `o.kept` as `o.job` would load it now.
 * @returns the preview, with the counts the server announced when the pages were read (for documents, their number:
 *   the server's rows= is not recorded for them)
 * @throws EtlError PAGES_NOT_KEPT (not retryable) when the pages are incomplete, damaged, or of another output type
 *   than the job's now; readDocument's errors for documents (DOCUMENT_NOT_FOUND when their target lost them); the
 *   decoders' and the database's errors, as a preview from the server throws them
 */
export async function previewKeptPages(o: KeptPreviewOptions): Promise<JobPreview> {
  const { report, target: targetConfig } = o.job.job;
  const shape = outputShape(report.outputType, targetConfig);
  const documents = 'docs' in o.kept ? o.kept : undefined;
  const archive = 'docs' in o.kept ? undefined : o.kept;
  const keptType = archive ? `${archive.outputType} pages` : 'documents';
  if (archive ? archive.outputType !== report.outputType : shape !== 'file')
    throw new EtlError(
      'PAGES_NOT_KEPT',
      `attempt ${o.kept.attemptId} kept ${keptType}, and the job's output type is now ${report.outputType}: ` +
        'preview the job from the server instead',
      { retryable: false },
    );
  const declaredTypes = await resolveDeclaredTypes(o.pool, o.job.name, targetConfig.columns);
  const now = new Date();
  const request = {
    ...(o.interval?.logicalStart ? { logicalStart: o.interval.logicalStart.toISOString() } : {}),
    ...(o.interval?.logicalEnd ? { logicalEnd: o.interval.logicalEnd.toISOString() } : {}),
  };
  const range = runRange(o.job, logicalTimeOf(o.job, request, now));
  const opened = archive ? await openKeptPages(o.pool, archive) : undefined;
  const kept = opened ?? documentPages(o.pool, documents!.docs);
  const counts = archive
    ? { rows: archive.announcedRows ?? 0, pages: archive.announcedPages }
    : { rows: documents!.docs.length, pages: documents!.docs.length };
  const announced = { pages: counts.pages, rows: shape === 'rows' ? archive?.announcedRows : undefined };
  const id = `${archive ? 'kept pages' : 'documents'} of attempt ${o.kept.attemptId}`;
  const decoder = () => jobDecoder(o.job, now);
  const rows = reportRows(kept, id, decoder, previewLogger(o.logger), o.signal, { maxPages: 1, announced });
  try {
    const limit = Math.min(o.rows, 1000);
    const shown = await previewInRollback(o.pool, o.job, rows, { declaredTypes, limit, range });
    return { reportRows: counts.rows, reportPages: counts.pages, loadedDocuments: documents?.docs.length, ...shown };
  } catch (err) {
    // A decoder stops on damaged bytes before their sha256 is checked: the damage is what failed the preview.
    const kept = (err as { code?: unknown }).code === 'PAGES_NOT_KEPT' || o.signal?.aborted ? undefined : opened;
    const damage = await kept?.damaged();
    throw damage ?? err;
  } finally {
    await opened?.close();
  }
}
