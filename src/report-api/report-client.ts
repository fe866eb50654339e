/**
 * The report client (docs/report-export-service.md "What the service does" 3: start, poll, read pages, delete) on
 * the discovery document, the shared token cache and authorized {report_api} calls.
 */
import type { Dispatcher } from 'undici';
import { sleep } from '../backoff.ts';
import { AbortedError, ConfigError, EtlError, type ErrorCode } from '../errors.ts';
import { silentLogger, type Logger } from '../logger.ts';
import { makeApiCaller, type ApiCaller } from './api-request.ts';
import { discoverEndpoints } from './discovery.ts';
import { HttpError, PollTimeoutError, ReportFailedError, RightsFailureError, type ReportApiStage } from './errors.ts';
import {
  credentialSecrets,
  DEFAULT_RETRY,
  HttpTransport,
  isNotSentError,
  readJsonAnswer,
  readSnippet,
  type RetryPolicy,
} from './http.ts';
import { resumablePageStream } from './page-stream.ts';
import { encodeReportName } from './report-name.ts';
import { startRequestProblems } from './report-rules.ts';
import { refreshAccessToken } from './oauth-grants.ts';
import { TokenCache, tokenCacheKey, tokenRequestsKey, type AccessTokens } from './token-cache.ts';
import { requestClientCredentialsToken, type IssuedToken } from './token-request.ts';
import { makeUserAccessTokens } from './user-tokens.ts';
import type {
  FinishedReport,
  PageStream,
  ReportClient,
  ReportClientOptions,
  ReportJob,
  StartReportRequest,
} from './types.ts';

/** Growth of the poll interval (docs/report-export-service.md "Limits": increase it for long-running reports). */
const POLL_GROWTH = 1.5;

const JOB_STATES = new Set(['Running', 'FinishedSuccess', 'FinishedError']);

// Failures of the start request that prove no job was created, besides isNotSentError's: refused, no token to send
// it with (obtained before the POST, or after a 401 the server did not process), aborted before sending.
const NOT_STARTED_CODES = new Set<ErrorCode>(['ACCESS_FORBIDDEN', 'UNAUTHORIZED', 'ABORTED', 'TOKEN_FAILED']);

/** A Job body (docs/report-export-service.md "Resources and their fields"). @throws HttpError when it is none */
function parseJob(body: unknown, stage: ReportApiStage): ReportJob {
  const b = body as Partial<Record<keyof ReportJob, unknown>> | null;
  if (b === null || typeof b !== 'object' || typeof b.id !== 'string' || !JOB_STATES.has(b.state as string)) {
    throw new HttpError('the server answered with something that is not a job', {
      stage,
      httpStatus: 200,
      bodySnippet: JSON.stringify(body)?.slice(0, 300),
    });
  }
  const job: ReportJob = { id: b.id, state: b.state as ReportJob['state'], message: '' };
  if (typeof b.message === 'string') job.message = b.message;
  for (const k of ['submittedAt', 'startedAt', 'finishedAt'] as const) if (typeof b[k] === 'string') job[k] = b[k];
  if (Array.isArray(b.result)) job.result = b.result;
  return job;
}

interface Parts {
  connection: ReportClientOptions['connection'];
  http: HttpTransport;
  api: ApiCaller;
  tokenEndpoint: string;
  retry: RetryPolicy;
  logger: Logger;
}

/** The HTTP report client; see {@link ReportClient}. */
class HttpReportClient implements ReportClient {
  readonly tokenEndpoint: string;
  private readonly c: Parts;

  constructor(c: Parts) {
    this.c = c;
    this.tokenEndpoint = c.tokenEndpoint;
  }

  async startReport(req: StartReportRequest, signal?: AbortSignal): Promise<ReportJob> {
    const name = encodeReportName(req.name, this.c.connection.pathEncoding, { job: req.job });
    const problems = startRequestProblems(req);
    if (problems.length)
      throw new ConfigError(problems.map((p) => `${req.job === undefined ? '' : `job "${req.job}": `}${p}`));
    if (signal?.aborted) throw new AbortedError(signal.reason);
    const path = `/report/${req.mandant}/${name}`;
    const json = { outputType: req.outputType, paging: req.paging, parameters: req.parameters };
    // Not cut by the signal: a job the server created must come back to us so it can be deleted.
    const call = {
      method: 'POST',
      path,
      stage: 'start',
      json,
      signal,
      abortInFlight: false,
      idempotent: false,
    } as const;
    const res = await this.c.api.send(call).catch((err: unknown) => {
      // A failure at the token (no login yet, a refused refresh) never sent the start request either.
      const notStarted = err instanceof EtlError && (NOT_STARTED_CODES.has(err.code) || err.stage === 'token');
      if (!isNotSentError(err) && !notStarted) {
        // The service offers no way to list jobs: one created before the answer was lost cannot be deleted.
        this.c.logger.warn(
          { path, err: (err as Error).message },
          'starting the report failed after the request was sent: the server may hold a report job whose id never ' +
            'came back',
        );
      }
      throw err;
    });
    if (res.statusCode !== 200) throw await this.unexpected(res, 'POST', path, 'start');
    const job = parseJob(await readJsonAnswer(res, 'start', this.c.http.redact), 'start');
    this.c.logger.debug({ reportJobId: job.id, state: job.state }, 'report started');
    if (job.state === 'FinishedError') {
      await this.deleteQuietly(job.id);
      // A rights failure is FinishedError at once with result: [] (docs/report-export-service.md "States and
      // transitions").
      if (Array.isArray(job.result))
        throw new RightsFailureError(req.name, job.message, job.id, this.c.api.tokenScope());
      const failed = new ReportFailedError(job.id, job.message);
      failed.stage = 'start';
      throw failed;
    }
    if (signal?.aborted) {
      await this.deleteQuietly(job.id);
      throw new AbortedError(signal.reason);
    }
    return job;
  }

  async waitForJob(
    jobId: string,
    signal?: AbortSignal,
    startedAt?: number,
    onPoll?: (polls: number) => void,
  ): Promise<FinishedReport> {
    const { pollIntervalMs, pollMaxIntervalMs, pollTimeoutMs } = this.c.connection;
    const started = Math.min(startedAt ?? Date.now(), Date.now());
    const path = `/jobs/${encodeURIComponent(jobId)}`;
    let interval = pollIntervalMs;
    // The first interval counts from `started`; each later one from the answer to the poll before.
    let due = started + interval;
    for (let polls = 1; ; polls++) {
      const remaining = pollTimeoutMs - (Date.now() - started);
      await sleep(Math.max(0, Math.min(due - Date.now(), remaining)), signal);
      const res = await this.c.api.send({ method: 'GET', path, stage: 'poll', signal });
      if (res.statusCode !== 200) throw await this.unexpected(res, 'GET', path, 'poll');
      const job = parseJob(await readJsonAnswer(res, 'poll', this.c.http.redact), 'poll');
      onPoll?.(polls);
      if (job.state === 'FinishedSuccess') {
        const m = /^\s*rows=(\d+)\s*;\s*pages=(\d+)\s*$/.exec(job.message);
        if (m === null) {
          const bodySnippet = job.message.slice(0, 300);
          throw new HttpError('FinishedSuccess message is not rows=<n>;pages=<n>', { stage: 'poll', bodySnippet });
        }
        return { jobId, rows: Number(m[1]), pages: Number(m[2]), job, polls };
      }
      if (job.state === 'FinishedError') throw new ReportFailedError(jobId, job.message);
      const waited = Date.now() - started;
      if (waited >= pollTimeoutMs) throw new PollTimeoutError(jobId, waited);
      interval = Math.min(pollMaxIntervalMs, Math.ceil(interval * POLL_GROWTH));
      due = Date.now() + interval;
    }
  }

  async openPage(jobId: string, page: number, signal?: AbortSignal): Promise<PageStream | null> {
    if (!Number.isInteger(page) || page < 1) throw new RangeError(`page must be an integer >= 1, got ${page}`);
    const path = `/jobs/${encodeURIComponent(jobId)}/output/${page}`;
    const fetchPage = async () => {
      const res = await this.c.api.send({ method: 'GET', path, stage: 'fetch', signal });
      if (res.statusCode === 404) {
        // Past the last page is 404 with an empty body (docs/report-export-service.md "Errors"); a 404 with a body
        // (e.g. problem+json for an unknown job) must not pass for "no more pages".
        const bodySnippet = await readSnippet(res, this.c.http.redact);
        if (bodySnippet === '') return null;
        throw new HttpError(`GET ${path} answered 404 with a body (job gone?)`, {
          stage: 'fetch',
          httpStatus: 404,
          bodySnippet,
        });
      }
      if (res.statusCode !== 200) throw await this.unexpected(res, 'GET', path, 'fetch');
      return res;
    };
    const first = await fetchPage();
    if (first === null) return null;
    const { retry, logger } = this.c;
    return resumablePageStream({ jobId, page, first, refetch: fetchPage, retry, signal, logger });
  }

  async deleteJob(jobId: string): Promise<void> {
    const path = `/jobs/${encodeURIComponent(jobId)}`;
    // No signal: an aborted run must still close its job.
    const res = await this.c.api.send({ method: 'DELETE', path, stage: 'delete' });
    if (res.statusCode !== 200 && res.statusCode !== 204 && res.statusCode !== 404)
      throw await this.unexpected(res, 'DELETE', path, 'delete');
    await res.body.dump();
    this.c.logger.debug({ reportJobId: jobId, status: res.statusCode }, 'report job deleted');
  }

  close(): Promise<void> {
    return this.c.http.close();
  }

  private async deleteQuietly(jobId: string): Promise<void> {
    await this.deleteJob(jobId).catch((err: unknown) =>
      this.c.logger.warn({ err, reportJobId: jobId }, 'could not delete the report job'),
    );
  }

  private async unexpected(res: Dispatcher.ResponseData, method: string, path: string, stage: ReportApiStage) {
    const bodySnippet = (await readSnippet(res, this.c.http.redact)) || undefined;
    return new HttpError(`${method} ${path} answered ${res.statusCode}`, {
      stage,
      httpStatus: res.statusCode,
      bodySnippet,
    });
  }
}

/**
 * Makes a report client: reads the discovery document (docs/report-export-service.md "Obtaining the token endpoint"),
 * sets up a keep-alive agent and the Redis-shared token cache. No token is requested yet.
 * @throws ConfigError (no clientSecret, or no authStore for authorization_code); ServerUnreachableError; TokenError
 */
export async function makeReportClient(opts: ReportClientOptions): Promise<ReportClient> {
  const { connection, connectionName } = opts;
  if ((connection.auth ?? 'client_credentials') === 'client_credentials' && !connection.clientSecret) {
    throw new ConfigError([
      `connection "${connectionName}": clientSecret is missing; a client-credentials service user needs its ` +
        'Client-Secret (docs/report-export-service.md "Client credentials grant")',
    ]);
  }
  if (connection.auth === 'authorization_code' && !opts.authStore) {
    throw new ConfigError([
      `connection "${connectionName}": auth: authorization_code needs the login store (PostgreSQL); this caller ` +
        'gave none',
    ]);
  }
  const logger = (opts.logger ?? silentLogger).child({ component: 'report-api', connection: connectionName });
  const r = opts.retry;
  const retry: RetryPolicy = {
    attempts: Math.max(1, r?.attempts ?? DEFAULT_RETRY.attempts),
    baseDelayMs: r?.baseDelayMs ?? DEFAULT_RETRY.baseDelayMs,
    maxDelayMs: r?.maxDelayMs ?? DEFAULT_RETRY.maxDelayMs,
  };
  const secrets = credentialSecrets(connection.clientId, connection.clientSecret);
  const http = new HttpTransport({ timeoutMs: connection.requestTimeoutMs, logger, secrets });
  const endpoints = await discoverEndpoints(connection.baseUrl, http, retry, opts.signal, connection.tokenOrigin).catch(
    async (err) => {
      await http.close();
      throw err;
    },
  );
  const keyPrefix = opts.keyPrefix ?? 'report-etl:';
  // Counted in Redis so that /metrics reports token requests of every process.
  const countRequest = async () => {
    await opts.redis.incr(tokenRequestsKey(opts.keyPrefix)).catch(() => undefined);
  };
  const store = opts.authStore;
  const shared = {
    redis: opts.redis,
    renewBeforeMs: (opts.tokenRenewBeforeSeconds ?? 30) * 1000,
    lockTtlMs: Math.min(connection.requestTimeoutMs, 30_000) + 5_000,
    waitTimeoutMs: retry.attempts * (connection.requestTimeoutMs + retry.maxDelayMs),
    logger,
    ...(store ? { onIssued: (t: IssuedToken) => store.recordScope(t.scope) } : {}),
  };
  const { clientId, clientSecret, baseUrl } = connection;
  let tokens: AccessTokens;
  if (connection.auth === 'authorization_code') {
    const client = { clientId, clientSecret, timeoutMs: connection.requestTimeoutMs, retry };
    tokens = makeUserAccessTokens({
      ...shared,
      keyPrefix,
      baseUrl,
      clientId,
      connection: connectionName,
      store: store!,
      refresh: (refreshToken) => refreshAccessToken(endpoints, client, connectionName, refreshToken),
      countRequest,
    });
  } else {
    const creds = { clientId, clientSecret: clientSecret!, credentials: connection.credentials };
    tokens = new TokenCache({
      ...shared,
      key: tokenCacheKey(keyPrefix, baseUrl, clientId, creds.clientSecret),
      fetchToken: async () => {
        await countRequest();
        return requestClientCredentialsToken(http, endpoints.tokenEndpoint, creds, retry);
      },
    });
  }
  const api = makeApiCaller({ baseUrl, http, tokens, retry, logger });
  return new HttpReportClient({ connection, http, api, tokenEndpoint: endpoints.tokenEndpoint, retry, logger });
}
