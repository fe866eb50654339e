/**
 * The report client (docs/report-export-service.md "What the service does" 3: start, poll, read pages, delete) on top of the
 * discovery document, the shared token cache and authorized {report_api} calls.
 */
import type { Dispatcher } from 'undici';
import { AbortedError, ConfigError, EtlError, type ErrorCode } from '../errors.ts';
import { silentLogger } from '../logger.ts';
import { ApiCaller } from './api-request.ts';
import { discoverEndpoints } from './discovery.ts';
import { HttpError, PollTimeoutError, ReportFailedError, RightsFailureError, type ReportApiStage } from './errors.ts';
import {
  credentialSecrets,
  DEFAULT_RETRY,
  HttpTransport,
  isNotSentError,
  readJsonAnswer,
  readSnippet,
  sleep,
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

/** Growth factor of the poll interval (docs/report-export-service.md "Limits": start at 250 ms, increase for long-running reports). */
export const POLL_GROWTH = 1.5;

const JOB_STATES = new Set(['Running', 'FinishedSuccess', 'FinishedError']);

/**
 * Failures of the start request that prove no report job was created, besides those of `isNotSentError`: refused
 * (403, 401 even with a fresh token), no access token to send it with (TOKEN_FAILED: the token is obtained before
 * the POST, or after a 401 that the server did not process), or aborted before sending.
 */
const NOT_STARTED_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'ACCESS_FORBIDDEN',
  'UNAUTHORIZED',
  'ABORTED',
  'TOKEN_FAILED',
]);

/**
 * Parses a Job body (docs/report-export-service.md "Resources and their fields": Job).
 * @throws HttpError when id, state or message is missing or of the wrong type
 */
export function parseJob(body: unknown, stage: ReportApiStage): ReportJob {
  const b = body as Partial<Record<keyof ReportJob, unknown>> | null;
  if (
    b === null ||
    typeof b !== 'object' ||
    typeof b.id !== 'string' ||
    typeof b.state !== 'string' ||
    !JOB_STATES.has(b.state)
  ) {
    throw new HttpError('the server answered with something that is not a job', {
      stage,
      httpStatus: 200,
      bodySnippet: JSON.stringify(body)?.slice(0, 300),
    });
  }
  const job: ReportJob = {
    id: b.id,
    state: b.state as ReportJob['state'],
    message: typeof b.message === 'string' ? b.message : '',
  };
  if (typeof b.submittedAt === 'string') job.submittedAt = b.submittedAt;
  if (typeof b.startedAt === 'string') job.startedAt = b.startedAt;
  if (typeof b.finishedAt === 'string') job.finishedAt = b.finishedAt;
  if (Array.isArray(b.result)) job.result = b.result;
  return job;
}

/**
 * Reads `rows=<n>;pages=<n>` from a FinishedSuccess message (docs/report-export-service.md "Job (report session)": message).
 * @throws HttpError when the message has another form
 */
export function parseRowsAndPages(message: string, stage: ReportApiStage = 'poll'): { rows: number; pages: number } {
  const m = /^\s*rows=(\d+)\s*;\s*pages=(\d+)\s*$/.exec(message);
  if (m === null)
    throw new HttpError('FinishedSuccess message is not rows=<n>;pages=<n>', {
      stage,
      bodySnippet: message.slice(0, 300),
    });
  return { rows: Number(m[1]), pages: Number(m[2]) };
}

/** The report client over HTTP (docs/report-export-service.md "Endpoints" #1–#4). */
class HttpReportClient implements ReportClient {
  readonly tokenEndpoint: string;
  private readonly opts: ReportClientOptions;
  private readonly http: HttpTransport;
  private readonly api: ApiCaller;
  private readonly retry: RetryPolicy;
  private readonly logger: NonNullable<ReportClientOptions['logger']>;

  constructor(
    opts: ReportClientOptions,
    http: HttpTransport,
    api: ApiCaller,
    tokenEndpoint: string,
    retry: RetryPolicy,
  ) {
    this.opts = opts;
    this.http = http;
    this.api = api;
    this.tokenEndpoint = tokenEndpoint;
    this.retry = retry;
    this.logger = (opts.logger ?? silentLogger).child({ component: 'report-api', connection: opts.connectionName });
  }

  async startReport(req: StartReportRequest, signal?: AbortSignal): Promise<ReportJob> {
    const name = encodeReportName(req.name, this.opts.connection.pathEncoding, { job: req.job });
    const problems = startRequestProblems(req);
    if (problems.length)
      throw new ConfigError(problems.map((p) => `${req.job === undefined ? '' : `job "${req.job}": `}${p}`));
    if (signal?.aborted) throw new AbortedError(signal.reason);
    const path = `/report/${req.mandant}/${name}`;
    // The POST is not cut by the signal: a job the server created must come back to us so it can be deleted.
    const res = await this.api
      .send({
        method: 'POST',
        path,
        stage: 'start',
        json: { outputType: req.outputType, paging: req.paging, parameters: req.parameters },
        signal,
        abortInFlight: false,
        idempotent: false,
      })
      .catch((err: unknown) => {
        // A failure at the token (no login yet, a refused refresh) never sent the start request either.
        const notStarted = err instanceof EtlError && (NOT_STARTED_CODES.has(err.code) || err.stage === 'token');
        if (!isNotSentError(err) && !notStarted) {
          // the service's description offers no way to list jobs: a job created before the answer was lost cannot be deleted.
          this.logger.warn(
            { path, err: (err as Error).message },
            'starting the report failed after the request was sent: the server may hold a report job whose id never came back',
          );
        }
        throw err;
      });
    if (res.statusCode !== 200) throw await this.unexpected(res, 'POST', path, 'start');
    const job = parseJob(await readJsonAnswer(res, 'start', this.http.redact), 'start');
    this.logger.debug({ reportJobId: job.id, state: job.state }, 'report started');
    if (job.state === 'FinishedError') {
      await this.deleteQuietly(job.id);
      // docs/report-export-service.md "States and transitions": a rights failure is FinishedError at once with result: [].
      if (Array.isArray(job.result)) throw new RightsFailureError(req.name, job.message, job.id, this.api.tokenScope());
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

  async waitForJob(jobId: string, signal?: AbortSignal, startedAt?: number): Promise<FinishedReport> {
    const { pollIntervalMs, pollMaxIntervalMs, pollTimeoutMs } = this.opts.connection;
    const started = Math.min(startedAt ?? Date.now(), Date.now());
    const path = `/jobs/${encodeURIComponent(jobId)}`;
    let interval = pollIntervalMs;
    // The first interval counts from `started`; each later one from the answer to the poll before.
    let due = started + interval;
    let polls = 0;
    for (;;) {
      const remaining = pollTimeoutMs - (Date.now() - started);
      await sleep(Math.max(0, Math.min(due - Date.now(), remaining)), signal);
      const res = await this.api.send({ method: 'GET', path, stage: 'poll', signal });
      polls += 1;
      if (res.statusCode !== 200) throw await this.unexpected(res, 'GET', path, 'poll');
      const job = parseJob(await readJsonAnswer(res, 'poll', this.http.redact), 'poll');
      if (job.state === 'FinishedSuccess') {
        const { rows, pages } = parseRowsAndPages(job.message);
        return { jobId, rows, pages, job, polls };
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
      const res = await this.api.send({ method: 'GET', path, stage: 'fetch', signal });
      if (res.statusCode === 404) {
        // docs/report-export-service.md "Errors": past the last page is 404 with an empty body; a 404 with a body (e.g. problem+json
        // for an unknown job) must not pass for "no more pages".
        const snippet = await readSnippet(res, this.http.redact);
        if (snippet === '') return null;
        throw new HttpError(`GET ${path} answered 404 with a body (job gone?)`, {
          stage: 'fetch',
          httpStatus: 404,
          bodySnippet: snippet,
        });
      }
      if (res.statusCode !== 200) throw await this.unexpected(res, 'GET', path, 'fetch');
      return res;
    };
    const first = await fetchPage();
    if (first === null) return null;
    return resumablePageStream({
      jobId,
      page,
      first,
      refetch: fetchPage,
      retry: this.retry,
      signal,
      logger: this.logger,
    });
  }

  async deleteJob(jobId: string): Promise<void> {
    const path = `/jobs/${encodeURIComponent(jobId)}`;
    // Deliberately no signal: an aborted run must still close its job.
    const res = await this.api.send({ method: 'DELETE', path, stage: 'delete' });
    if (res.statusCode === 200 || res.statusCode === 204 || res.statusCode === 404) {
      await res.body.dump();
      this.logger.debug({ reportJobId: jobId, status: res.statusCode }, 'report job deleted');
      return;
    }
    throw await this.unexpected(res, 'DELETE', path, 'delete');
  }

  close(): Promise<void> {
    return this.http.close();
  }

  private async deleteQuietly(jobId: string): Promise<void> {
    try {
      await this.deleteJob(jobId);
    } catch (err) {
      this.logger.warn({ err, reportJobId: jobId }, 'could not delete the report job');
    }
  }

  private async unexpected(
    res: Dispatcher.ResponseData,
    method: string,
    path: string,
    stage: ReportApiStage,
  ): Promise<HttpError> {
    const snippet = await readSnippet(res, this.http.redact);
    return new HttpError(`${method} ${path} answered ${res.statusCode}`, {
      stage,
      httpStatus: res.statusCode,
      bodySnippet: snippet || undefined,
    });
  }
}

/**
 * Makes a report client: reads the discovery document (docs/report-export-service.md "Obtaining the token endpoint": on every
 * start), sets up a keep-alive undici agent and the Redis-shared token cache. No token is requested yet.
 * @throws ServerUnreachableError when the server cannot be reached at all (refused, DNS, unreachable, connect
 *   timeout); TokenError when the discovery document cannot be read otherwise or names no token_endpoint
 */
export async function makeReportClient(opts: ReportClientOptions): Promise<ReportClient> {
  const { connection } = opts;
  const logger = (opts.logger ?? silentLogger).child({ component: 'report-api', connection: opts.connectionName });
  const retry: RetryPolicy = {
    attempts: Math.max(1, opts.retry?.attempts ?? DEFAULT_RETRY.attempts),
    baseDelayMs: opts.retry?.baseDelayMs ?? DEFAULT_RETRY.baseDelayMs,
    maxDelayMs: opts.retry?.maxDelayMs ?? DEFAULT_RETRY.maxDelayMs,
  };
  const http = new HttpTransport({
    timeoutMs: connection.requestTimeoutMs,
    logger,
    secrets: credentialSecrets(connection.clientId, connection.clientSecret),
  });
  if ((connection.auth ?? 'client_credentials') === 'client_credentials' && !connection.clientSecret) {
    await http.close();
    throw new ConfigError([
      `connection "${opts.connectionName}": clientSecret is missing; a client-credentials service user needs its Client-Secret (docs/report-export-service.md "Client credentials grant")`,
    ]);
  }
  if (connection.auth === 'authorization_code' && !opts.authStore) {
    await http.close();
    throw new ConfigError([
      `connection "${opts.connectionName}": auth: authorization_code needs the login store (PostgreSQL); this caller gave none`,
    ]);
  }
  let endpoints: Awaited<ReturnType<typeof discoverEndpoints>>;
  try {
    endpoints = await discoverEndpoints(connection.baseUrl, http, retry, opts.signal);
  } catch (err) {
    await http.close();
    throw err;
  }
  const { tokenEndpoint } = endpoints;
  const keyPrefix = opts.keyPrefix ?? 'report-etl:';
  // Counted in Redis so that /metrics reports token requests of every process.
  const countRequest = async () => {
    await opts.redis.incr(tokenRequestsKey(opts.keyPrefix)).catch(() => undefined);
  };
  const store = opts.authStore;
  const onIssued = store ? (t: IssuedToken) => store.recordScope(t.scope) : undefined;
  const lockTtlMs = Math.min(connection.requestTimeoutMs, 30_000) + 5_000;
  const waitTimeoutMs = retry.attempts * (connection.requestTimeoutMs + retry.maxDelayMs);
  const renewBeforeMs = (opts.tokenRenewBeforeSeconds ?? 30) * 1000;
  let tokens: AccessTokens;
  if (connection.auth === 'authorization_code') {
    const client = {
      clientId: connection.clientId,
      clientSecret: connection.clientSecret,
      timeoutMs: connection.requestTimeoutMs,
      retry,
    };
    tokens = makeUserAccessTokens({
      redis: opts.redis,
      keyPrefix,
      baseUrl: connection.baseUrl,
      clientId: connection.clientId,
      connection: opts.connectionName,
      store: store!,
      refresh: (refreshToken) => refreshAccessToken(endpoints, client, opts.connectionName, refreshToken),
      ...(onIssued ? { onIssued } : {}),
      renewBeforeMs,
      lockTtlMs,
      waitTimeoutMs,
      logger,
      countRequest,
    });
  } else {
    const creds = {
      clientId: connection.clientId,
      clientSecret: connection.clientSecret!,
      credentials: connection.credentials,
    };
    tokens = new TokenCache({
      redis: opts.redis,
      key: tokenCacheKey(keyPrefix, connection.baseUrl, connection.clientId, creds.clientSecret),
      renewBeforeMs,
      fetchToken: async () => {
        await countRequest();
        return requestClientCredentialsToken(http, tokenEndpoint, creds, retry);
      },
      ...(onIssued ? { onIssued } : {}),
      lockTtlMs,
      waitTimeoutMs,
      logger,
    });
  }
  const api = new ApiCaller({ baseUrl: connection.baseUrl, http, tokens, retry, logger });
  return new HttpReportClient(opts, http, api, tokenEndpoint, retry);
}
