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
  /** The decoder of the current pass (the documents decoder keeps the archived documents). */
  readonly decoder: PageDecoder;
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
 * @param makeDecoder makes a fresh decoder of the report's output type, one per pass over the pages
 * @param maxPages read at most this many pages (a preview reads one); default all, until the server's 404
 */
export function reportRows(client: ReportClient, reportJobId: string, makeDecoder: () => PageDecoder, logger: Logger, signal?: AbortSignal, maxPages = Infinity): ReportRows {
  let decoder = makeDecoder();
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
  // The rows read by open() to learn the columns, handed out first by rows(); or the failure of decoding them, thrown
  // by rows() too, where the loader's COPY (and its fall-back from binary to text) meets every row's failure.
  let first: IteratorResult<Buffer> | undefined;
  let failed: { err: unknown } | undefined;
  return {
    copyFormat: decoder.copyFormat,
    writesBinary: decoder.writesBinary,
    fixedColumns: decoder.fixedColumns,
    get decoder() {
      return decoder;
    },
    get format() {
      return decoder.format;
    },
    get pages() {
      return pages;
    },
    get bytes() {
      return bytes;
    },
    async open(plan) {
      decoder.planRows(plan);
      try {
        first = await source.next();
      } catch (err) {
        // Before the columns were known, the failure is open()'s own; after, it belongs to the rows.
        if (decoder.columns === undefined) throw err;
        failed = { err };
      }
      return decoder.columns;
    },
    async *rows() {
      if (failed) {
        const { err } = failed;
        failed = undefined;
        throw err;
      }
      if (first && !first.done && first.value.length > 0) yield first.value;
      first = undefined;
      yield* source;
    },
    async restart() {
      await source.return(undefined).catch(() => undefined);
      decoder = makeDecoder();
      pages = 0;
      bytes = 0;
      pageStartRows.length = 0;
      first = undefined;
      failed = undefined;
      source = allPages();
    },
    kinds: () => decoder.kinds,
    pageOfRow: (row) => pageOfRow(pageStartRows, row),
    async close() {
      await source.return(undefined).catch(() => undefined);
    },
  };
}
