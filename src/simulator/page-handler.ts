/**
 * GET {report_api}/jobs/{id}/output/{page} (docs/report-export-service.md "Endpoints" #3, "Output page shapes"). Pages
 * are streamed chunk by chunk with backpressure (a false res.write() waits for 'drain'); txt pages carry Content-Length
 * (measured by a first rendering pass and cached per page), json and xml_query are chunked. The reset fault sends a
 * prefix of the page, then closes the connection; the SIM_FAULT parameter asks for a bad page (page-faults.ts): one
 * sent whole with its fault, or one byte at a time. Choices where the service's description shows nothing: a job still
 * Running or finished with an error has no pages (404, empty body); a page that is not a positive integer is 400
 * problem+json; GET .../output without a page is 404, empty body.
 */
import type { ServerResponse } from 'node:http';
import type { SimContext } from './context.ts';
import { REPORT_API_HEADERS, send, sendProblem } from './http-util.ts';
import { jobState, type SimJob } from './jobs.ts';
import { applyPageFault, TRICKLE_INTERVAL_MS, type PageFault } from './page-faults.ts';
import {
  hasContentLength,
  isStreamed,
  PAGE_CONTENT_TYPES,
  pageRenderer,
  type RenderContext,
  type StreamedOutputType,
} from './render.ts';
import { renderDocument } from './render-documents.ts';
import { jobNotFound } from './report-handlers.ts';

/** Resolves once the response can take more data or is gone. */
function drainOrClose(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** Byte length of a page, rendering it once without keeping it (cached per job and page). */
export function pageLength(job: SimJob, page: number, from: number, to: number, ctx: SimContext): number {
  let len = job.pageLengths.get(page);
  if (len === undefined) {
    len = 0;
    const rctx = renderContext(ctx, job, page);
    for (const chunk of pageRenderer(job.outputType as StreamedOutputType)(job.data!, from, to, rctx))
      len += Buffer.byteLength(chunk);
    job.pageLengths.set(page, len);
  }
  return len;
}

function renderContext(ctx: SimContext, job: SimJob, page: number): RenderContext {
  return { zone: ctx.zone, page, report: job.reportPath, paging: job.paging };
}

/** The SIM_FAULT of one page: a fault of the job's whole paging (endless-pages, extra-row) is no page's. */
function faultOnPage(job: SimJob, page: number): PageFault | undefined {
  const kind = job.fault?.page === page ? job.fault.kind : undefined;
  return kind === 'endless-pages' || kind === 'extra-row' ? undefined : kind;
}

/** A page rendered whole: a document, or a page with a SIM_FAULT (page-faults.ts); kept per job and page. */
function wholePage(ctx: SimContext, job: SimJob, page: number, from: number, to: number): Promise<Buffer> {
  let p = job.wholePages.get(page);
  if (p === undefined) {
    const rctx = renderContext(ctx, job, page);
    const type = job.outputType;
    const fault = faultOnPage(job, page);
    const cache = fault ? undefined : ctx.pageCache;
    p = (async () => {
      const cached = cache?.whole(job.dataKey, type, job.paging, page);
      if (cached) return cached;
      let buf: Buffer;
      if (isStreamed(type)) {
        buf = Buffer.concat(
          [...pageRenderer(type)(job.data!, from, to, rctx)].map((c) =>
            typeof c === 'string' ? Buffer.from(c, 'utf8') : c,
          ),
        );
      } else {
        buf = await renderDocument(type, job.data!, from, to, rctx, type === 'pdf' ? job.padBytes : 0);
      }
      if (fault) return applyPageFault(fault, buf);
      cache?.keepWhole(job.dataKey, type, job.paging, page, buf);
      return buf;
    })();
    job.wholePages.set(page, p);
  }
  return p;
}

/** Serves a page rendered whole, with Content-Length; the reset fault cuts it. */
async function sendWhole(
  ctx: SimContext,
  job: SimJob,
  page: number,
  from: number,
  to: number,
  cutFraction: number,
  res: ServerResponse,
): Promise<void> {
  const buf = await wholePage(ctx, job, page, from, to);
  if (res.destroyed) return;
  const fault = faultOnPage(job, page);
  const contentType = fault === 'wrong-content-type' ? 'text/html' : PAGE_CONTENT_TYPES[job.outputType];
  res.writeHead(200, { ...REPORT_API_HEADERS, 'Content-Type': contentType, 'Content-Length': String(buf.length) });
  if (fault === 'trickle') return trickle(ctx, buf, res);
  if (cutFraction > 0 && buf.length > 1) {
    const cutAt = Math.max(1, Math.min(buf.length - 1, Math.floor(buf.length * cutFraction)));
    ctx.counters.faultsInjected.resets++;
    await new Promise<void>((resolve) => res.write(buf.subarray(0, cutAt), () => resolve()));
    res.socket?.destroy();
    res.destroy();
    return;
  }
  if (!res.write(buf)) await drainOrClose(res);
  if (res.destroyed) return;
  res.end();
  ctx.counters.pagesServed++;
  ctx.counters.bytesServed += buf.length;
}

/** Sends `buf` one byte every TRICKLE_INTERVAL_MS (the trickle fault) until it is sent or the client went away. */
async function trickle(ctx: SimContext, buf: Buffer, res: ServerResponse): Promise<void> {
  res.flushHeaders();
  for (let at = 0; at < buf.length; at++) {
    if (!(await closedWithin(res, at === 0 ? 0 : TRICKLE_INTERVAL_MS))) res.write(buf.subarray(at, at + 1));
    if (res.destroyed) return;
  }
  res.end();
  ctx.counters.pagesServed++;
  ctx.counters.bytesServed += buf.length;
}

/** Resolves after `ms`, or at once (true) when the response is closed meanwhile. */
function closedWithin(res: ServerResponse, ms: number): Promise<boolean> {
  if (res.destroyed) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (closed: boolean): void => {
      clearTimeout(timer);
      res.off('close', onClose);
      resolve(closed);
    };
    const onClose = (): void => done(true);
    const timer = setTimeout(() => done(false), ms);
    res.on('close', onClose);
  });
}

/**
 * Serves a page from the page cache: one write of the rendered bytes (txt with Content-Length, the others
 * chunked, as the streaming path sends them).
 */
async function sendCached(
  ctx: SimContext,
  job: SimJob,
  page: number,
  data: NonNullable<SimJob['data']>,
  res: ServerResponse,
): Promise<void> {
  const buf = ctx.pageCache!.page(job.dataKey, data, job.outputType as StreamedOutputType, job.paging, page, ctx.zone);
  const headers: Record<string, string> = { ...REPORT_API_HEADERS, 'Content-Type': PAGE_CONTENT_TYPES[job.outputType] };
  if (hasContentLength(job.outputType)) headers['Content-Length'] = String(buf.length);
  res.writeHead(200, headers);
  if (!res.write(buf)) await drainOrClose(res);
  if (res.destroyed) return;
  res.end();
  ctx.counters.pagesServed++;
  ctx.counters.bytesServed += buf.length;
}

/** Serves one output page. */
export async function handleOutput(
  ctx: SimContext,
  id: string,
  pageRaw: string | undefined,
  res: ServerResponse,
): Promise<void> {
  const job = ctx.jobs.get(id);
  if (!job) return jobNotFound(res, id);
  const empty404 = (): void => send(res, 404, REPORT_API_HEADERS);
  if (pageRaw === undefined) return empty404();
  if (!/^\d{1,9}$/.test(pageRaw))
    return sendProblem(
      res,
      400,
      { title: 'Bad Request', detail: 'page must be an integer starting at 1' },
      REPORT_API_HEADERS,
    );
  let page = Number(pageRaw);
  const data = job.data;
  if (!data || jobState(job, Date.now()) !== 'FinishedSuccess') return empty404();
  const lastPage = Math.ceil(data.rowCount / job.paging);
  // endless-pages: past the last page the last one comes again, never the 404 that ends the paging.
  if (job.fault?.kind === 'endless-pages' && page > lastPage && lastPage > 0) page = lastPage;
  const from = (page - 1) * job.paging;
  if (page < 1 || from >= data.rowCount) return empty404();
  const to = Math.min(from + job.paging, data.rowCount);

  const cutFraction = ctx.faults.drawReset();
  const type = job.outputType;
  if (!isStreamed(type) || faultOnPage(job, page)) return sendWhole(ctx, job, page, from, to, cutFraction, res);
  if (ctx.pageCache && cutFraction === 0) return sendCached(ctx, job, page, data, res);
  const isTxt = hasContentLength(type);
  const length = isTxt || cutFraction > 0 ? pageLength(job, page, from, to, ctx) : -1;
  const headers: Record<string, string> = { ...REPORT_API_HEADERS, 'Content-Type': PAGE_CONTENT_TYPES[job.outputType] };
  if (isTxt) headers['Content-Length'] = String(length);
  res.writeHead(200, headers);

  const cutAt = cutFraction > 0 ? Math.max(1, Math.min(length - 1, Math.floor(length * cutFraction))) : Infinity;
  let sent = 0;
  for (const chunk of pageRenderer(type)(data, from, to, renderContext(ctx, job, page))) {
    if (res.destroyed) return;
    const size = Buffer.byteLength(chunk);
    if (sent + size >= cutAt) {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
      ctx.counters.faultsInjected.resets++;
      ctx.logger.debug({ reportJobId: id, page, bytes: cutAt, of: length }, 'simulator: cutting page (reset fault)');
      await new Promise<void>((resolve) => res.write(buf.subarray(0, cutAt - sent), () => resolve()));
      res.socket?.destroy();
      res.destroy();
      return;
    }
    sent += size;
    if (!res.write(chunk)) await drainOrClose(res);
  }
  if (res.destroyed) return;
  res.end();
  ctx.counters.pagesServed++;
  ctx.counters.bytesServed += sent;
}
