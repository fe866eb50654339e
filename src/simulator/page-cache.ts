/**
 * Rendered output pages kept in memory (SimulatorOptions.pageCache), so that serving a page costs next to
 * nothing: the benchmark (bench/run.ts) measures the worker, not the renderers. A page is keyed by report,
 * parameters, seed, output type, paging and page number, and holds exactly the bytes the streaming renderer
 * would send (docs/report-export-service.md "Output page shapes"). Memory is the sum of the cached pages:
 * {@link PageCache.clear} between report shapes. Documents (rendered whole, asynchronously) are kept once served
 * ({@link PageCache.keepWhole}).
 */
import type { ReportData } from './catalogue.ts';
import type { OutputType } from '../vocabulary.ts';
import { pageRenderer, type StreamedOutputType } from './render.ts';
import type { ZonedFormatter } from './time-format.ts';
import { followsState, type DataState } from './catalogue.ts';

/** Identifies one report run's rows: report path, parameters, seed and data state (what reportData() takes). */
export function dataKey(
  reportPath: string,
  parameters: Record<string, string>,
  seed: number,
  state: DataState = { mandant: '', revision: 0 },
): string {
  const sorted = Object.keys(parameters)
    .sort()
    .map((k) => [k, parameters[k]]);
  // Most reports serve every mandant the same rows: one rendering serves them all (and prerender, which names none).
  const follows = followsState(reportPath) ? `|${state.mandant}|${state.revision}` : '';
  return `${reportPath}|${JSON.stringify(sorted)}|${seed}${follows}`;
}

/** The rendered pages of the simulator; see the file comment. */
export class PageCache {
  private readonly pages = new Map<string, Buffer>();
  /** Bytes of all cached pages. */
  bytes = 0;

  private static key(data: string, outputType: OutputType, paging: number, page: number): string {
    return `${data}|${outputType}|${paging}|${page}`;
  }

  /**
   * The bytes of page `page` (1-based) holding rows [from, to) of `data`, rendered on first use.
   * @param data the report's rows; `key` is its {@link dataKey}
   */
  page(
    key: string,
    data: ReportData,
    outputType: StreamedOutputType,
    paging: number,
    page: number,
    zone: ZonedFormatter,
  ): Buffer {
    const k = PageCache.key(key, outputType, paging, page);
    let buf = this.pages.get(k);
    if (buf === undefined) {
      const from = (page - 1) * paging;
      const to = Math.min(from + paging, data.rowCount);
      const parts: Buffer[] = [];
      for (const chunk of pageRenderer(outputType)(data, from, to, { zone, page, report: key.split('|')[0], paging })) {
        parts.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
      }
      buf = Buffer.concat(parts);
      this.pages.set(k, buf);
      this.bytes += buf.length;
    }
    return buf;
  }

  /** A page rendered whole (a document) kept under the same key, or undefined. */
  whole(key: string, outputType: OutputType, paging: number, page: number): Buffer | undefined {
    return this.pages.get(PageCache.key(key, outputType, paging, page));
  }

  /** Keeps a page rendered whole (a document), for {@link whole}. */
  keepWhole(key: string, outputType: OutputType, paging: number, page: number, buf: Buffer): void {
    const k = PageCache.key(key, outputType, paging, page);
    if (!this.pages.has(k)) this.bytes += buf.length;
    this.pages.set(k, buf);
  }

  /** Drops every cached page. */
  clear(): void {
    this.pages.clear();
    this.bytes = 0;
  }
}
