/**
 * Routes of the run history pages:
 * - `GET /admin/runs`: the logical runs (filters `job`, `status` of the newest attempt, `limit` per job);
 * - `GET /admin/runs/:job/:runKey`: one run, its attempts, the documents it loaded and its reverts;
 * - `POST /admin/runs/:job/:runKey/replay`: queues the failed run again, under its run key, and redirects back (303)
 *   with `?replayed=<queue job id>`, or `?replayError=<code>` (run-pages.ts REPLAY_ERRORS) when it was refused; with
 *   the form field `from=pages`, from the run's newest complete kept pages, as `replay --from-pages` does
 *   (docs/operations.md "Kept pages"), except after a guard trip (`?replayError=guard-tripped`: accept it instead);
 * - `GET /admin/attempts/:attemptId`: one attempt, its errors and documents;
 * - `GET /admin/attempts/:attemptId/documents/:page`: one document, streamed from its target table as an attachment.
 * Older links to an attempt (`/admin/runs/<attempt id>`, and its `/documents/<page>`) are redirected (301), and
 * `/admin/runs/<run key>` to its run's page (302), as a run key pasted from the command line would be.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { subjectZone } from '../config/job-zone.ts';
import type { EtlConfig } from '../config/schema.ts';
import { coerceError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { RunQueue } from '../queue/queue.ts';
import { replayRefusalOf, replayRun } from '../queue/replay.ts';
import { getAttempt } from '../history/attempts.ts';
import { attemptsOfRun, listRunErrors, loadingAttemptOf, type AttemptListRow } from '../history/attempt-list.ts';
import { listJobNames, listRecentRuns, type RunListFilter } from '../history/run-list.ts';
import { findRunsByKey, getRun, type RunRow } from '../history/runs.ts';
import { isReverted, revertsOfRun } from '../history/reverts.ts';
import { newestCompleteArchive } from '../history/page-archive.ts';
import { ATTEMPT_STATUSES, type AttemptStatus } from '../vocabulary.ts';
import { renderAttemptPage } from './attempt-page.ts';
import { sendPage, sendText } from './html.ts';
import {
  attemptPath,
  guardTripped,
  renderRunList,
  renderRunPage,
  replayable,
  runPath,
  type NewestFailure,
} from './run-pages.ts';
import { DocumentNotFoundError, listRunDocuments, readDocument } from '../warehouse/documents.ts';
import { jobOfSubject } from '../config/mandants.ts';

/** What the run routes need. */
interface RunRoutesDeps {
  pool: pg.Pool;
  queue: RunQueue;
  logger: Logger;
  /** jobs.yaml now, for the replayed job's attempts and backoff. */
  config?: () => EtlConfig | undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Default and largest number of runs shown per job on the run list. */
const RUNS_PER_JOB = { default: 10, max: 200 } as const;

/** The longest run key looked up from a URL. */
const MAX_RUN_KEY_LENGTH = 200;

/** Parses the run list's query string; unknown or malformed values fall back to "all" / the default. */
function parseRunListFilter(q: Record<string, unknown>): RunListFilter {
  const job = typeof q.job === 'string' && q.job !== '' && q.job.length <= 200 ? q.job : undefined;
  const status =
    typeof q.status === 'string' && (ATTEMPT_STATUSES as readonly string[]).includes(q.status)
      ? (q.status as AttemptStatus)
      : undefined;
  const n = typeof q.limit === 'string' ? Number.parseInt(q.limit, 10) : NaN;
  const perJob = Number.isFinite(n) ? Math.min(Math.max(n, 1), RUNS_PER_JOB.max) : RUNS_PER_JOB.default;
  return { job, status, perJob };
}

/** The failure of a run's newest attempt when the run stands failed or interrupted (`attempts` newest first). */
async function newestFailure(
  pool: pg.Pool,
  run: RunRow,
  attempts: AttemptListRow[],
): Promise<NewestFailure | undefined> {
  const newest = attempts[0];
  if (!replayable(run) || !newest || (newest.status !== 'failed' && newest.status !== 'interrupted')) return undefined;
  const errors = await listRunErrors(pool, newest.attempt_id);
  return { attempt: newest, error: errors.at(-1) };
}

/**
 * `replayed`, when it names a queue job that replays `run`; else undefined, so that a link cannot make the page claim
 * a replay (or show its text).
 */
async function replayOfRun(queue: RunQueue, replayed: string | undefined, run: RunRow): Promise<string | undefined> {
  if (!replayed || replayed.length > 500) return undefined;
  const queued = await queue.getJob(replayed);
  const data = queued?.data as { job?: unknown; runKey?: unknown; trigger?: unknown } | undefined;
  return data?.job === run.job && data.runKey === run.run_key && data.trigger === 'replay' ? replayed : undefined;
}

/** Whether the newest attempt of a run that stands failed was stopped by its target's guard (GUARD_TRIPPED). */
async function guardTrippedLast(pool: pg.Pool, job: string, runKey: string): Promise<boolean> {
  const run = await getRun(pool, job, runKey);
  return run !== undefined && guardTripped(await newestFailure(pool, run, await attemptsOfRun(pool, job, runKey)));
}

/** Registers the run history routes on `app` (access control is the server's onRequest hook). */
export function registerRunRoutes(app: FastifyInstance, deps: RunRoutesDeps): void {
  /** The runs whose key is `id`, a path parameter (one longer than any run key asks nothing). */
  const runsOfKey = (id: string): Promise<RunRow[]> =>
    id.length > MAX_RUN_KEY_LENGTH ? Promise.resolve([]) : findRunsByKey(deps.pool, id);

  app.get('/admin/runs', async (req, reply) => {
    const filter = parseRunListFilter(req.query as Record<string, unknown>);
    const [rows, jobs] = await Promise.all([listRecentRuns(deps.pool, filter), listJobNames(deps.pool)]);
    const config = deps.config?.();
    const zones = (job: string) => subjectZone(config, job);
    return sendPage(reply, renderRunList(rows, filter, jobs, zones));
  });

  type RunParams = { Params: { job: string; runKey: string } };
  app.get<RunParams & { Querystring: Record<string, string | undefined> }>(
    '/admin/runs/:job/:runKey',
    async (req, reply) => {
      const { job, runKey } = req.params;
      const run = await getRun(deps.pool, job, runKey);
      if (!run) return sendText(reply, 404, `no run ${runKey} of job ${job}`);
      const [attempts, loading, reverts] = await Promise.all([
        attemptsOfRun(deps.pool, job, runKey),
        loadingAttemptOf(deps.pool, job, runKey),
        revertsOfRun(deps.pool, job, runKey),
      ]);
      const [documents, failure, kept] = await Promise.all([
        loading ? listRunDocuments(deps.pool, loading) : [],
        newestFailure(deps.pool, run, attempts),
        // Looked up only when the page offers Replay.
        replayable(run) || isReverted(run, reverts) ? newestCompleteArchive(deps.pool, job, runKey) : undefined,
      ]);
      const config = deps.config?.();
      const notice = {
        replayedJobId: await replayOfRun(deps.queue, req.query.replayed, run),
        replayError: req.query.replayError,
        jobGone: config !== undefined && !jobOfSubject(config, run.job),
      };
      const zone = subjectZone(config, run.job);
      return sendPage(reply, renderRunPage(run, attempts, notice, loading, documents, zone, reverts, failure, kept));
    },
  );

  app.post<RunParams>('/admin/runs/:job/:runKey/replay', async (req, reply) => {
    const { job, runKey } = req.params;
    const back = runPath(job, runKey);
    // The same replay as `replay --from-pages` with the form's from=pages ("Replay from kept pages").
    const fromPages = (req.body as Record<string, string> | undefined)?.from === 'pages';
    try {
      // The page offers no such button after a guard trip (the same pages trip it again) but `replay --accept-guard`;
      // a form posted from an older page is refused alike.
      if (fromPages && (await guardTrippedLast(deps.pool, job, runKey))) {
        deps.logger.warn({ job, runKey }, 'replay from kept pages refused: the guard tripped, accept it instead');
        return reply.redirect(`${back}?replayError=guard-tripped`, 303);
      }
      const config = deps.config?.();
      const { jobId } = await replayRun(
        config ? { queue: deps.queue, pool: deps.pool, config } : { queue: deps.queue, pool: deps.pool },
        { job, runKey },
        { fromPages },
      );
      deps.logger.info({ job, runKey, jobId, fromPages }, 'replay queued from the admin page');
      return reply.redirect(`${back}?replayed=${encodeURIComponent(jobId)}`, 303);
    } catch (err) {
      const message = coerceError(err).message;
      deps.logger.warn({ job, runKey, err: message }, 'replay from the admin page refused');
      // A code, never the text: the page shows its own words for it, so a link cannot put text into the page.
      return reply.redirect(`${back}?replayError=${replayRefusalOf(err) ?? 'failed'}`, 303);
    }
  });

  app.get<{ Params: { attemptId: string } }>('/admin/attempts/:attemptId', async (req, reply) => {
    const { attemptId } = req.params;
    const attempt = UUID.test(attemptId) ? await getAttempt(deps.pool, attemptId) : undefined;
    const run = attempt ? await getRun(deps.pool, attempt.job, attempt.run_key) : undefined;
    if (!attempt || !run) {
      // A run key in the attempt's place (a manual run's is a UUID too): its run's page, when one job has it.
      const runs = attempt ? [] : await runsOfKey(attemptId);
      if (runs.length === 1) return reply.redirect(runPath(runs[0]!.job, attemptId), 302);
      return sendText(reply, 404, `no attempt ${attemptId}`);
    }
    const [errors, attempts, documents] = await Promise.all([
      listRunErrors(deps.pool, attemptId),
      attemptsOfRun(deps.pool, run.job, run.run_key),
      listRunDocuments(deps.pool, attemptId),
    ]);
    const [failure, kept] = await Promise.all([
      newestFailure(deps.pool, run, attempts),
      replayable(run) ? newestCompleteArchive(deps.pool, run.job, run.run_key) : undefined,
    ]);
    const config = deps.config?.();
    const jobGone = config !== undefined && !jobOfSubject(config, run.job);
    const zone = subjectZone(config, run.job);
    const page = renderAttemptPage(attempt, run, errors, attempts, documents, jobGone, zone, failure, kept);
    return sendPage(reply, page);
  });

  type DocumentParams = { Params: { attemptId: string; page: string } };
  app.get<DocumentParams>('/admin/attempts/:attemptId/documents/:page', async (req, reply) => {
    const { attemptId, page } = req.params;
    const doc =
      UUID.test(attemptId) && /^[1-9]\d{0,8}$/.test(page)
        ? (await listRunDocuments(deps.pool, attemptId)).find((d) => d.page === Number(page))
        : undefined;
    if (!doc) return sendText(reply, 404, `no document on page ${page} of attempt ${attemptId}`);
    const body = readDocument(deps.pool, doc);
    // The first slice is read before the answer starts, so that a document gone from its target is a clean 404.
    let first: IteratorResult<Buffer>;
    try {
      first = await body.next();
    } catch (err) {
      if (err instanceof DocumentNotFoundError) return sendText(reply, 404, err.message);
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

  app.get<{ Params: { attemptId: string } }>('/admin/runs/:attemptId', async (req, reply) => {
    const { attemptId: id } = req.params;
    if (UUID.test(id) && (await getAttempt(deps.pool, id))) return reply.redirect(attemptPath(id), 301);
    // A run key without its job, as `report-etl run` and `runs` print it: the run's page when one job has it
    // (302: a later run of another job may take the same key).
    const runs = await runsOfKey(id);
    if (runs.length === 1) return reply.redirect(runPath(runs[0]!.job, id), 302);
    const pages = "a run's page is /admin/runs/<job>/<run key>, an attempt's /admin/attempts/<attempt id>";
    if (runs.length > 1) {
      const each = runs.map((r) => runPath(r.job, id)).join(', ');
      return sendText(reply, 404, `run key ${id} is a run of several jobs: ${each}`);
    }
    return sendText(reply, 404, `no run or attempt ${id}: ${pages}`);
  });
  app.get<DocumentParams>('/admin/runs/:attemptId/documents/:page', async (req, reply) => {
    const { attemptId, page } = req.params;
    return reply.redirect(`${attemptPath(attemptId)}/documents/${encodeURIComponent(page)}`, 301);
  });
}
