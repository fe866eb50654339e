/**
 * The page timings of an attempt that also record its progress (etl.attempts.progress, history/attempt-progress.ts;
 * docs/observability.md "Run history"): at each page's start and end, and once a second while a page is read, the
 * newest figures go to the recorder, which writes them outside the load transaction without the load waiting.
 */
import type { ProgressRecorder } from '../history/attempt-progress.ts';
import type { PageTiming, PageTimings } from './report-rows.ts';

/** Page timings that pass every page on to `inner` and note the progress in `recorder`. */
export interface ProgressTimings extends PageTimings {
  /** Stops noting, writes the last figures noted and waits for them (never throws). Idempotent. */
  close(): Promise<void>;
}

/**
 * Wraps `inner` (the attempt's trace) so that `recorder` learns of every page.
 * @param announcedPages the pages the server announced (`pages=`), or null when unknown
 */
export function progressTimings(
  inner: PageTimings,
  recorder: ProgressRecorder,
  announcedPages: number | null,
): ProgressTimings {
  let page = 0;
  let pagesRead = 0;
  let rowsRead: () => number = () => 0;
  let ticker: NodeJS.Timeout | undefined;
  const note = () => recorder.note({ page, pagesRead, pages: announcedPages, rows: rowsRead() });
  return {
    page(p: PageTiming) {
      inner.page(p);
      if (!p.failed) pagesRead = Math.max(pagesRead, p.page);
      note();
    },
    pageStarted(n, rows) {
      inner.pageStarted?.(n, rows);
      // The request past the last page (for the server's 404 that ends them) reads no page of its own.
      page = announcedPages === null ? n : Math.min(n, announcedPages);
      rowsRead = rows;
      if (n === 1) pagesRead = 0;
      note();
      if (!ticker) {
        ticker = setInterval(note, 1000);
        ticker.unref();
      }
    },
    async close() {
      if (ticker) clearInterval(ticker);
      ticker = undefined;
      await recorder.close();
    },
  };
}
