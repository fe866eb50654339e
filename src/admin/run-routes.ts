/**
 * Routes of the run history pages: `GET /admin/runs` (filters `job`, `status`, `limit` per job),
 * `GET /admin/runs/:runId` (with the run's archived documents), `GET /admin/runs/:runId/documents/:page` (one
 * document, streamed from its target table as an attachment), and `POST /admin/runs/:runId/replay`, which re-queues the failed run through the
 * queue's replayRun (the same logical run, so append loads stay exactly-once) and redirects back (303) with a
 * notice. Access control is the server's onRequest hook, not these routes'.
 */
import { Readable } from 'node:stream';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import type { EtlConfig } from '../config/schema.ts';
import { coerceError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { RunQueue } from '../queue/queue.ts';
import { replayRun } from '../queue/replay.ts';
import { getAttempt } from '../history/attempts.ts';
import { ATTEMPT_STATUSES, type AttemptStatus } from '../vocabulary.ts';
import { PAGE_CSP } from './html.ts';
import { renderRunList, renderRunPage } from './run-pages.ts';
import { listAttempts, listJobNames, listRecentRuns, listRunErrors, type RunListFilter } from '../history/run-list.ts';
import { DocumentNotFoundError, listRunDocuments, readDocument } from '../warehouse/documents.ts';

/** What the run routes need. */
export interface RunRoutesDeps {
  pool: pg.Pool;
  queue: RunQueue;
  logger: Logger;
  /** jobs.yaml now, for the replayed job's attempts and backoff. */
  config?: () => EtlConfig | undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Default and largest number of attempts shown per job on the run list. */
export const RUNS_PER_JOB = { default: 10, max: 200 } as const;

/** Parses the run list's query string; unknown or malformed values fall back to "all" / the default. */
export function parseRunListFilter(q: Record<string, unknown>): RunListFilter {
  const job = typeof q.job === 'string' && q.job !== '' && q.job.length <= 200 ? q.job : undefined;
  const status = typeof q.status === 'string' && (ATTEMPT_STATUSES as readonly string[]).includes(q.status) ? (q.status as AttemptStatus) : undefined;
  const n = typeof q.limit === 'string' ? Number.parseInt(q.limit, 10) : NaN;
  const perJob = Number.isFinite(n) ? Math.min(Math.max(n, 1), RUNS_PER_JOB.max) : RUNS_PER_JOB.default;
  return { job, status, perJob };
}

/** Registers the run history routes on `app`. */
export function registerRunRoutes(app: FastifyInstance, deps: RunRoutesDeps): void {
  app.get('/admin/runs', async (req, reply) => {
    const filter = parseRunListFilter(req.query as Record<string, unknown>);
    const [rows, jobs] = await Promise.all([listRecentRuns(deps.pool, filter), listJobNames(deps.pool)]);
    return reply.header('content-security-policy', PAGE_CSP).type('text/html; charset=utf-8').send(renderRunList(rows, filter, jobs));
  });

  app.get<{ Params: { runId: string }; Querystring: Record<string, string | undefined> }>('/admin/runs/:runId', async (req, reply) => {
    const { runId } = req.params;
    const run = UUID.test(runId) ? await getAttempt(deps.pool, runId) : undefined;
    if (!run) return reply.code(404).type('text/plain; charset=utf-8').send(`no run ${runId}\n`);
    const [errors, attempts, documents] = await Promise.all([listRunErrors(deps.pool, runId), listAttempts(deps.pool, run.job, run.run_key), listRunDocuments(deps.pool, runId)]);
    const html = renderRunPage(run, errors, attempts, { replayedJobId: req.query.replayed, replayError: req.query.replayError }, documents);
    return reply.header('content-security-policy', PAGE_CSP).type('text/html; charset=utf-8').send(html);
  });

  app.get<{ Params: { runId: string; page: string } }>('/admin/runs/:runId/documents/:page', async (req, reply) => {
    const { runId, page } = req.params;
    const doc = UUID.test(runId) && /^[1-9]\d{0,8}$/.test(page) ? (await listRunDocuments(deps.pool, runId)).find((d) => d.page === Number(page)) : undefined;
    if (!doc) return reply.code(404).type('text/plain; charset=utf-8').send(`no document on page ${page} of run ${runId}\n`);
    const body = readDocument(deps.pool, doc);
    // The first slice is read before the answer starts, so that a document gone from its target is a clean 404.
    let first: IteratorResult<Buffer>;
    try {
      first = await body.next();
    } catch (err) {
      if (err instanceof DocumentNotFoundError) return reply.code(404).type('text/plain; charset=utf-8').send(`${err.message}\n`);
      throw err;
    }
    async function* all(): AsyncGenerator<Buffer> {
      if (!first.done) yield first.value;
      yield* body;
    }
    return reply
      .header('content-type', doc.contentType)
      .header('content-length', String(doc.bytes))
      .header('content-disposition', `attachment; filename="${doc.fileName.replace(/[^A-Za-z0-9_.-]/g, '_')}"`)
      .header('x-content-type-options', 'nosniff')
      .send(Readable.from(all()));
  });

  app.post<{ Params: { runId: string } }>('/admin/runs/:runId/replay', async (req, reply) => {
    const { runId } = req.params;
    const back = `/admin/runs/${encodeURIComponent(runId)}`;
    if (!UUID.test(runId)) return reply.code(404).type('text/plain; charset=utf-8').send(`no run ${runId}\n`);
    try {
      const config = deps.config?.();
      const { jobId } = await replayRun(config ? { queue: deps.queue, pool: deps.pool, config } : { queue: deps.queue, pool: deps.pool }, runId);
      deps.logger.info({ runId, jobId }, 'replay queued from the admin page');
      return reply.redirect(`${back}?replayed=${encodeURIComponent(jobId)}`, 303);
    } catch (err) {
      const message = coerceError(err).message;
      deps.logger.warn({ runId, err: message }, 'replay from the admin page refused');
      return reply.redirect(`${back}?replayError=${encodeURIComponent(message.slice(0, 500))}`, 303);
    }
  });
}
