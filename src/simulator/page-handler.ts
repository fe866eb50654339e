/**
 * GET {report_api}/jobs/{id}/output/{page} (spec "Endpoints" #3, "Output page shapes"). Pages are
 * streamed chunk by chunk with backpressure (a false res.write() waits for 'drain'); txt pages carry
 * Content-Length (measured by a first rendering pass and cached per page), json and xml_query are
 * chunked. The reset fault sends a prefix of the page, then closes the connection. Choices where the
 * spec shows nothing: a job still Running or finished with an error has no pages (404, empty body); a page
 * that is not a positive integer is 400 problem+json; GET .../output without a page is 404, empty body.
 */
import type { ServerResponse } from 'node:http';
import type { SimContext } from './context.ts';
import { REPORT_API_HEADERS, send, sendProblem } from './http-util.ts';
import { jobState, type SimJob } from './jobs.ts';
import { PAGE_CONTENT_TYPES, pageRenderer, type RenderContext } from './render.ts';
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
    const rctx: RenderContext = { zone: ctx.zone, page };
    for (const chunk of pageRenderer(job.outputType)(job.data!, from, to, rctx)) len += Buffer.byteLength(chunk);
    job.pageLengths.set(page, len);
  }
  return len;
}

/**
 * Serves a page from the page cache: one write of the rendered bytes (txt with Content-Length, the others
 * chunked, as the streaming path sends them).
 */
async function sendCached(ctx: SimContext, job: SimJob, page: number, data: NonNullable<SimJob['data']>, res: ServerResponse): Promise<void> {
  const buf = ctx.pageCache!.page(job.dataKey, data, job.outputType, job.paging, page, ctx.zone);
  const headers: Record<string, string> = { ...REPORT_API_HEADERS, 'Content-Type': PAGE_CONTENT_TYPES[job.outputType] };
  if (job.outputType === 'txt') headers['Content-Length'] = String(buf.length);
  res.writeHead(200, headers);
  if (!res.write(buf)) await drainOrClose(res);
  if (res.destroyed) return;
  res.end();
  ctx.counters.pagesServed++;
  ctx.counters.bytesServed += buf.length;
}

/** Serves one output page. */
export async function handleOutput(ctx: SimContext, id: string, pageRaw: string | undefined, res: ServerResponse): Promise<void> {
  const job = ctx.jobs.get(id);
  if (!job) return jobNotFound(res, id);
  const empty404 = (): void => send(res, 404, REPORT_API_HEADERS);
  if (pageRaw === undefined) return empty404();
  if (!/^\d{1,9}$/.test(pageRaw)) return sendProblem(res, 400, { title: 'Bad Request', detail: 'page must be an integer starting at 1' }, REPORT_API_HEADERS);
  const page = Number(pageRaw);
  const data = job.data;
  if (!data || jobState(job, Date.now()) !== 'FinishedSuccess') return empty404();
  const from = (page - 1) * job.paging;
  if (page < 1 || from >= data.rowCount) return empty404();
  const to = Math.min(from + job.paging, data.rowCount);

  const cutFraction = ctx.faults.drawReset();
  if (ctx.pageCache && cutFraction === 0) return sendCached(ctx, job, page, data, res);
  const isTxt = job.outputType === 'txt';
  const length = isTxt || cutFraction > 0 ? pageLength(job, page, from, to, ctx) : -1;
  const headers: Record<string, string> = { ...REPORT_API_HEADERS, 'Content-Type': PAGE_CONTENT_TYPES[job.outputType] };
  if (isTxt) headers['Content-Length'] = String(length);
  res.writeHead(200, headers);

  const cutAt = cutFraction > 0 ? Math.max(1, Math.min(length - 1, Math.floor(length * cutFraction))) : Infinity;
  let sent = 0;
  for (const chunk of pageRenderer(job.outputType)(data, from, to, { zone: ctx.zone, page })) {
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
