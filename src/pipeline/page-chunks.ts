/**
 * The pages of one finished report job as one stream of COPY rows: GET output/1, 2, … until 404 (spec
 * "Endpoints" #3 and note 1), each page's body fed through the decoder. Pulling drives everything: the COPY
 * stream pulls rows, the decoder pulls page bytes, undici reads the socket only as fast as PostgreSQL takes rows.
 */
import type { PageDecoder } from '../pages/decoder.ts';
import type { ReportClient } from '../report-api/index.ts';
import { throwIfAborted } from '../errors.ts';
import type { Logger } from '../logger.ts';

/** Running figures of a run's download, updated as pages stream. */
export interface DownloadProgress {
  pages: number;
  bytes: number;
  /** pageStartRows[i] = rows of the run before page i+1. */
  pageStartRows: number[];
}

/** Makes an empty {@link DownloadProgress}. */
export function makeProgress(): DownloadProgress {
  return { pages: 0, bytes: 0, pageStartRows: [] };
}

/** 1-based row of the run → 1-based page, from the progress's page starts. */
export function pageOfRow(progress: DownloadProgress, row: number): number {
  const starts = progress.pageStartRows;
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! < row) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}

async function* counted(body: AsyncIterable<Uint8Array>, progress: DownloadProgress): AsyncGenerator<Uint8Array> {
  for await (const chunk of body) {
    progress.bytes += chunk.length;
    yield chunk;
  }
}

/**
 * Yields the COPY rows of every page of `jobId`, in page order, logging each page's rows, bytes and rate.
 * @throws whatever the client (fetch) or the decoder (parse) throws; AbortedError when `signal` aborts
 */
export async function* reportChunks(
  client: ReportClient,
  jobId: string,
  decoder: PageDecoder,
  progress: DownloadProgress,
  logger: Logger,
  signal?: AbortSignal,
): AsyncGenerator<Buffer> {
  const started = performance.now();
  for (let page = 1; ; page++) {
    throwIfAborted(signal);
    const pageStarted = performance.now();
    const stream = await client.openPage(jobId, page, signal);
    if (!stream) break;
    const rowsBefore = decoder.rows;
    const bytesBefore = progress.bytes;
    progress.pageStartRows.push(rowsBefore);
    yield* decoder.decodePage(counted(stream.body, progress), page);
    progress.pages = page;
    const ms = performance.now() - pageStarted;
    const rows = decoder.rows - rowsBefore;
    logger.info(
      {
        page,
        rows,
        bytes: progress.bytes - bytesBefore,
        ms: Math.round(ms),
        rowsPerSec: Math.round((rows / Math.max(ms, 1)) * 1000),
        totalRows: decoder.rows,
        totalMB: +(progress.bytes / 1e6).toFixed(1),
        elapsedS: +((performance.now() - started) / 1000).toFixed(1),
        resumes: stream.resumes(),
      },
      'page loaded',
    );
  }
}
