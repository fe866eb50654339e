/**
 * The pages of one finished report job as one {@link RowSource}: GET output/1, 2, … until 404 (docs/report-export-service.md "Endpoints" #3
 * and note 1), each page's body fed through the page decoder of the output type. Pulling drives everything: COPY
 * pulls rows, the decoder pulls page bytes, undici reads the socket only as fast as PostgreSQL takes rows. One page
 * is requested ahead, so that the server's rendering of page n+1 and the network overlap the COPY of page n.
 */
import { throwIfAborted } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { PageDecoder } from '../pages/decoder.ts';
import type { PageStream, ReportClient } from '../report-api/index.ts';
import type { RowSource } from '../warehouse/row-source.ts';

/** A report's rows, with running figures of the download. */
export interface ReportRows extends RowSource {
  /** Pages read completely so far. */
  readonly pages: number;
  /** Bytes of page bodies downloaded so far. */
  readonly bytes: number;
}

/** 1-based row → 1-based page, from the rows before each page (`pageStartRows[i]` = rows before page i+1). */
export function pageOfRow(pageStartRows: readonly number[], row: number): number {
  let lo = 0;
  let hi = pageStartRows.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (pageStartRows[mid]! < row) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}

/**
 * Opens the rows of the finished report job `reportJobId`, logging each page's rows, bytes and rate.
 * Nothing is requested before {@link RowSource.open}.
 * @param decoder a fresh decoder of the report's output type (one per report)
 * @param maxPages read at most this many pages (a preview reads one); default all, until the server's 404
 */
export function reportRows(client: ReportClient, reportJobId: string, decoder: PageDecoder, logger: Logger, signal?: AbortSignal, maxPages = Infinity): ReportRows {
  const pageStartRows: number[] = [];
  let pages = 0;
  let bytes = 0;

  async function* counted(body: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    for await (const chunk of body) {
      bytes += chunk.length;
      yield chunk;
    }
  }

  /** Requests page `page`; a failure is kept for the `await` that takes the page (never an unhandled rejection). */
  function request(page: number): Promise<PageStream | null> {
    const answer = client.openPage(reportJobId, page, signal);
    answer.then(
      // A body that fails before it is read (an abort, a re-fetch that failed) must not be an uncaught 'error' event:
      // its reader gets the error from the stream itself, and an unread one has nobody to tell.
      (stream) => stream?.body.on('error', () => undefined),
      () => undefined,
    );
    return answer;
  }

  async function* allPages(): AsyncGenerator<Buffer> {
    const started = performance.now();
    let next: Promise<PageStream | null> | undefined = maxPages >= 1 ? request(1) : undefined;
    try {
      for (let page = 1; page <= maxPages; page++) {
        throwIfAborted(signal);
        const pageStarted = performance.now();
        const stream = await next!;
        next = undefined;
        if (!stream) break;
        // Look-ahead of one page: page n+1 is asked for now, so that the server renders it and its first bytes
        // travel while page n is decoded and copied. Its body is not read until page n is done: undici buffers at
        // most its high-water mark and then pauses the socket (and its body timeout), so memory stays flat.
        if (page < maxPages) next = request(page + 1);
        const rowsBefore = decoder.rows;
        const bytesBefore = bytes;
        pageStartRows.push(rowsBefore);
        yield* decoder.decodePage(counted(stream.body), page, { contentType: stream.contentType });
        pages = page;
        const ms = performance.now() - pageStarted;
        const rows = decoder.rows - rowsBefore;
        logger.info(
          {
            page,
            rows,
            bytes: bytes - bytesBefore,
            ms: Math.round(ms),
            rowsPerSec: Math.round((rows / Math.max(ms, 1)) * 1000),
            totalRows: decoder.rows,
            totalMB: +(bytes / 1e6).toFixed(1),
            elapsedS: +((performance.now() - started) / 1000).toFixed(1),
            resumes: stream.resumes(),
          },
          'page loaded',
        );
      }
    } finally {
      // Ended early (a failure, an abort, close()): the page asked for ahead is never read; close its body so that
      // its socket is freed rather than held until the agent closes.
      if (next) void next.then((s) => s?.body.destroy(), () => undefined);
    }
  }

  let source = allPages();
  // The rows read by open() to learn the columns, handed out first by rows() (an empty Buffer from the decoders that
  // can write binary format: they tell the columns before decoding any row).
  let first: IteratorResult<Buffer> | undefined;
  return {
    copyFormat: decoder.copyFormat,
    fixedColumns: decoder.fixedColumns,
    get pages() {
      return pages;
    },
    get bytes() {
      return bytes;
    },
    async open() {
      first = await source.next();
      return decoder.columns;
    },
    async *rows(inspect) {
      // Decided once, before any row after the first chunk is decoded (open() decoded that one inspecting).
      decoder.inspect = inspect;
      if (first && !first.done && first.value.length > 0) yield first.value;
      first = undefined;
      yield* source;
    },
    useBinary(encodings, timezone) {
      if (!decoder.useBinary || !decoder.reset || (first && !first.done && first.value.length > 0)) return false;
      decoder.inspect = false;
      return decoder.useBinary(encodings, timezone);
    },
    async restart() {
      await source.return(undefined).catch(() => undefined);
      decoder.reset!();
      pages = 0;
      bytes = 0;
      pageStartRows.length = 0;
      first = undefined;
      source = allPages();
    },
    kinds: () => decoder.kinds,
    pageOfRow: (row) => pageOfRow(pageStartRows, row),
    async close() {
      await source.return(undefined).catch(() => undefined);
    },
  };
}
