/**
 * The pages of one finished report job as one {@link RowSource}: GET output/1, 2, … until 404
 * (docs/report-export-service.md "Endpoints" #3 and note 1), each page's body fed through the page decoder of the
 * output type. Pulling drives everything: COPY pulls rows, the decoder pulls page bytes, undici reads the socket only
 * as fast as PostgreSQL takes rows. One page is requested ahead, so that the server's rendering of page n+1 and the
 * network overlap the COPY of page n.
 *
 * A broken or hostile server is bounded (docs/architecture.md "Limits"): each page has `pageTimeoutMs` from its
 * request to its last byte, and reading stops at the first page past the announced `pages=` and at the first row past
 * `rows=`, rather than at the end. Each page's times (requested, answered, read; of the reading: waiting for bytes,
 * for COPY) go to the attempt's timeline and spans (attempt-trace.ts).
 */
import { coerceError, throwIfAborted } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { PageDecoder } from '../pages/decoder.ts';
import type { PageStream, ReportClient } from '../report-api/index.ts';
import { PageCountMismatchError, RowCountMismatchError } from '../warehouse/load-errors.ts';
import type { RowSource } from '../warehouse/row-source.ts';
import { PageDeadlineReached, PageTimeoutError, startPageDeadline } from './deadlines.ts';
import type { KeptPageSink, PageArchive } from './page-archive.ts';

/** A report's rows, with running figures of the download. */
export interface ReportRows extends RowSource {
  /** The decoder of the current pass (the documents decoder keeps the archived documents). */
  readonly decoder: PageDecoder;
  /** Pages read completely so far. */
  readonly pages: number;
  /** Bytes of page bodies downloaded so far. */
  readonly bytes: number;
}

/** What bounds the reading of a report's pages (docs/architecture.md "Limits"). */
export interface ReportRowsLimits {
  /** Read at most this many pages (a preview reads one); default all, until the server's 404. */
  maxPages?: number | undefined;
  /**
   * Longest time of one page in ms, from its request to its last byte (pageTimeoutMs); the page asked for ahead counts
   * from when the page before it was read. Default none.
   */
  pageTimeoutMs?: number | undefined;
  /**
   * What the finished report job announced (`pages=`, and `rows=` where pages hold report rows): a page past `pages`
   * fails with PAGE_COUNT_MISMATCH as it arrives (its body unread), a row past `rows` with ROW_COUNT_MISMATCH as it
   * is decoded (before it goes to COPY).
   */
  announced?: { pages: number; rows?: number | undefined } | undefined;
}

/** A page asked for: its answer, and the means to cut its request and body (its deadline, or the reading ended). */
interface PageRequest {
  readonly page: number;
  readonly answer: Promise<PageStream | null>;
  readonly stop: AbortController;
  deadline?: NodeJS.Timeout | undefined;
  /** `performance.now()` when it was asked for, and when its answer (or failure) came. */
  readonly requestedAt: number;
  answeredAt: number;
}

/**
 * When one page was requested, answered and read, as `performance.now()` readings, and what its reading waited for.
 * Reading (`readFrom` to `readUntil`) is pulling its body through the decoder into COPY: `networkMs` of it went to
 * waiting for the server's bytes, `copyMs` to waiting for COPY to take the rows (PostgreSQL), the rest to decoding.
 */
export interface PageTiming {
  page: number;
  /** 1, or 2 for the pass after a restart (a binary COPY that started over in text format). */
  pass: number;
  requestedAt: number;
  /** The answer's headers arrived (or the request failed). */
  answeredAt: number;
  readFrom: number;
  readUntil: number;
  /** How long the reader waited for the page's answer before it could read it (0 when it came ahead of time). */
  waitMs: number;
  networkMs: number;
  copyMs: number;
  rows: number;
  bytes: number;
  /** Why reading the page failed, when it did. */
  failed?: Error | undefined;
}

/** Told of every page read, or failed while read. */
export interface PageTimings {
  page(p: PageTiming): void;
  /**
   * Told as the reader turns to page `page` (its answer not yet awaited); `rowsRead()` gives the rows read so far, of
   * the pages before it and of this one while it is read.
   */
  pageStarted?(page: number, rowsRead: () => number): void;
}

/**
 * Opens the rows of the finished report job `reportJobId`, logging each page's rows, bytes and rate.
 * Nothing is requested before {@link RowSource.open}. Reading throws, besides the errors of the pages and decoders:
 * PageTimeoutError (PAGE_TIMEOUT) when a page took longer than `limits.pageTimeoutMs`, PageCountMismatchError and
 * RowCountMismatchError at the first page or row past `limits.announced`.
 * @param makeDecoder makes a fresh decoder of the report's output type, one per pass over the pages
 * @param signal the attempt's: aborts every request and body
 * @param timings told of every page read (the attempt's timeline and spans)
 * @param archive keeps every page's bytes as they are read (docs/operations.md "Kept pages"); the reading waits for it
 */
export function reportRows(
  client: Pick<ReportClient, 'openPage'>,
  reportJobId: string,
  makeDecoder: () => PageDecoder,
  logger: Logger,
  signal?: AbortSignal,
  limits: ReportRowsLimits = {},
  timings?: PageTimings,
  archive?: PageArchive,
): ReportRows {
  const { maxPages = Infinity, pageTimeoutMs, announced } = limits;
  let decoder = makeDecoder();
  /** Rows of the run before each page: `pageStartRows[i]` before page i+1. */
  const pageStartRows: number[] = [];
  let pages = 0;
  let bytes = 0;
  let pass = 0;
  /** ms the current page's reading waited for the server's bytes, and for COPY to take its rows. */
  let networkMs = 0;
  let copyMs = 0;

  /** The page's bytes, counted, and kept by `kept` before the decoder sees them (it may reuse their memory). */
  async function* counted(body: AsyncIterable<Uint8Array>, kept?: KeptPageSink): AsyncGenerator<Uint8Array> {
    let asked = performance.now();
    for await (const chunk of body) {
      networkMs += performance.now() - asked;
      bytes += chunk.length;
      if (kept) await kept.write(chunk);
      yield chunk;
      asked = performance.now();
    }
    networkMs += performance.now() - asked;
    if (kept) await kept.end();
  }

  /** Requests page `page`; a failure is kept for the `await` that takes the page (never an unhandled rejection). */
  function request(page: number): PageRequest {
    const stop = new AbortController();
    const requestedAt = performance.now();
    const answer = client.openPage(reportJobId, page, signal ? AbortSignal.any([signal, stop.signal]) : stop.signal);
    const req: PageRequest = { page, answer, stop, requestedAt, answeredAt: NaN };
    answer.then(
      // A body that fails before it is read (an abort, a re-fetch that failed) must not be an uncaught 'error' event:
      // its reader gets the error from the stream itself, and an unread one has nobody to tell.
      (stream) => {
        req.answeredAt = performance.now();
        stream?.body.on('error', () => undefined);
      },
      () => {
        req.answeredAt = performance.now();
      },
    );
    return req;
  }

  /**
   * The rows of one page, stopping at the first row past the announced `rows=`. Time spent suspended at `yield` is
   * COPY's: the loader pulls the next rows once PostgreSQL took these.
   */
  async function* pageRows(stream: PageStream, page: number): AsyncGenerator<Buffer> {
    const kept = archive?.page(page, stream.contentType);
    const chunks = decoder.decodePage(counted(stream.body, kept), page, { contentType: stream.contentType });
    const most = announced?.rows ?? Infinity;
    for await (const chunk of chunks) {
      // A chunk holds whole rows; the first that goes past rows= stops the reading before it reaches COPY.
      if (decoder.rows > most) throw new RowCountMismatchError(most, decoder.rows, { page });
      const handed = performance.now();
      yield chunk;
      copyMs += performance.now() - handed;
    }
  }

  async function* allPages(): AsyncGenerator<Buffer> {
    const started = performance.now();
    pass += 1;
    let next: PageRequest | undefined = maxPages >= 1 ? request(1) : undefined;
    try {
      await archive?.begin();
      for (let page = 1; page <= maxPages; page++) {
        throwIfAborted(signal);
        const pageStarted = performance.now();
        const current = next!;
        next = undefined;
        // The page's deadline, from now, as the reader turns to it: its request, headers and body must end in time.
        current.deadline = startPageDeadline(pageTimeoutMs, current.stop);
        timings?.pageStarted?.(page, () => decoder.rows);
        const rowsBefore = decoder.rows;
        const bytesBefore = bytes;
        let stream: PageStream | null | undefined;
        let readFrom: number | undefined;
        let failure: unknown;
        networkMs = 0;
        copyMs = 0;
        try {
          stream = await current.answer;
          readFrom = performance.now();
          if (!stream) {
            await archive?.complete();
            break;
          }
          if (announced && page > announced.pages) {
            current.stop.abort(new Error('past the announced pages'));
            throw new PageCountMismatchError(announced.pages, pages, { page });
          }
          // Look-ahead of one page: page n+1 is asked for now, so that the server renders it and its first bytes
          // travel while page n is decoded and copied. Its body is not read until page n is done: undici buffers at
          // most its high-water mark and then pauses the socket (and its body timeout), so memory stays flat.
          if (page < maxPages) next = request(page + 1);
          pageStartRows.push(rowsBefore);
          yield* pageRows(stream, page);
        } catch (err) {
          failure = err;
          // The page's own deadline cut it (not the attempt's signal, whose abort speaks for itself).
          if (current.stop.signal.reason instanceof PageDeadlineReached && !signal?.aborted) {
            failure = new PageTimeoutError(reportJobId, page, pageTimeoutMs!, {
              answered: !!stream,
              bytes: bytes - bytesBefore,
              rows: decoder.rows - rowsBefore,
            });
          }
          throw failure;
        } finally {
          clearTimeout(current.deadline);
          // A page answered, or failed: its time counts where it went (also a page left half read when the load
          // stopped pulling).
          if (timings && (stream || failure !== undefined)) {
            const now = performance.now();
            const from = readFrom ?? now;
            timings.page({
              page,
              pass,
              requestedAt: current.requestedAt,
              answeredAt: Number.isNaN(current.answeredAt) ? from : current.answeredAt,
              readFrom: from,
              readUntil: now,
              waitMs: from - pageStarted,
              networkMs,
              copyMs,
              rows: decoder.rows - rowsBefore,
              bytes: bytes - bytesBefore,
              failed: failure === undefined ? undefined : coerceError(failure),
            });
          }
        }
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
      // Ended early (a failure, an abort, close()): the page asked for ahead is never read; cut its request and close
      // its body, so that its socket is freed rather than held until the agent closes.
      if (next) {
        next.stop.abort(new Error('reading ended'));
        void next.answer.then(
          (s) => s?.body.destroy(),
          () => undefined,
        );
      }
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
    // Only errors ask: the last page whose rows before it are fewer than `row`.
    pageOfRow: (row) => Math.max(1, pageStartRows.findLastIndex((before) => before < row) + 1),
    rowsBeforePage: (page) => pageStartRows[page - 1] ?? 0,
    rowOfCopyLine: (line) => decoder.rowOfCopyLine?.(line) ?? line,
    async close() {
      await source.return(undefined).catch(() => undefined);
    },
  };
}
