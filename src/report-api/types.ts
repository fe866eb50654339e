/**
 * The shapes the report client exchanges with its callers (docs/report-export-service.md "Resources and their fields").
 */
import type { Readable } from 'node:stream';
import type { Redis } from 'ioredis';
import type { OutputType } from '../vocabulary.ts';
import type { Logger } from '../logger.ts';
import type { PathEncoding } from './report-name.ts';
import type { AuthKind, CredentialsWay } from './report-rules.ts';

/**
 * What the client needs of a connection (jobs.yaml `connections.<name>`, validated by src/config): where the
 * server is, the kind of service user and its credentials (docs/report-export-service.md "Authentication"), how sub folders are encoded
 * (docs/report-export-service.md "Report naming rules") and the timing of requests and polls, in ms.
 */
export interface ReportConnection {
  /** the service's {base_url}, e.g. https://erp.example.com. */
  baseUrl: string;
  /** Kind of service user; default client_credentials. authorization_code needs ReportClientOptions.authStore. */
  auth?: AuthKind;
  /** Client-ID of the service user (docs/report-export-service.md "What the service does" 5). */
  clientId: string;
  /**
   * Client-Secret: required for client_credentials; for authorization_code only of a trusted (confidential) client
   * (docs/report-export-service.md "User-dependent service user" step 4).
   */
  clientSecret?: string | undefined;
  /** header: Authorization Basic (docs/report-export-service.md: recommended); body: client_id/client_secret fields (client credentials only). */
  credentials: CredentialsWay;
  /** Scopes the login requests (authorization_code; docs/report-export-service.md "User-dependent service user" step 1: at most 25). */
  scopes?: string[];
  /** Redirect URI configured for the service user (authorization_code; docs/report-export-service.md "User-dependent service user" step 1). */
  redirectUri?: string | undefined;
  /** The origin off baseUrl's that the discovery document may name for the token endpoint (discovery.ts). */
  tokenOrigin?: string | undefined;
  pathEncoding: PathEncoding;
  /** Timeout of one HTTP request, ms. */
  requestTimeoutMs: number;
  /** First job status poll interval, ms (docs/report-export-service.md "Limits": 250). */
  pollIntervalMs: number;
  /** Cap of the growing poll interval, ms. */
  pollMaxIntervalMs: number;
  /** How long a report job may stay Running before the attempt fails, ms. */
  pollTimeoutMs: number;
}

/** Options of makeReportClient. */
export interface ReportClientOptions {
  /** The validated jobs.yaml connection (baseUrl, credentials, pathEncoding, timeouts and poll intervals in ms). */
  connection: ReportConnection;
  /** Name of the connection in jobs.yaml, for logs and errors. */
  connectionName: string;
  /** ioredis instance holding the token cache shared by every process. */
  redis: Redis;
  /** Redis key prefix; default 'report-etl:'. */
  keyPrefix?: string;
  /** Aborts reading the discovery document (the only request made while the client is created). */
  signal?: AbortSignal;
  logger?: Logger;
  /** Retries of transient failures: attempts in all (default 5), first delay cap (default 200 ms), delay cap (default 10 000 ms). */
  retry?: { attempts?: number; baseDelayMs?: number; maxDelayMs?: number };
  /** Renew the access token this many seconds before it expires; default 30 (at most half its lifetime). */
  tokenRenewBeforeSeconds?: number;
  /**
   * Where the connection's login and scopes are kept (PostgreSQL, see src/history/logins.ts). Required for
   * `auth: authorization_code` (the refresh token lives there); for client credentials it records the scope.
   */
  authStore?: ConnectionAuthStore;
}

/** A stored login of a user-dependent service user: the refresh token (decrypted) and the id of that login. */
export interface StoredLogin {
  /** New for every successful login; an access token obtained under another login is never used. */
  loginId: string;
  refreshToken: string;
}

/** Where a user-dependent connection stands: logged in, or why runs must wait for `report-etl login`. */
export type LoginState = { kind: 'logged_in'; login: StoredLogin } | { kind: 'login_required'; reason: string };

/**
 * What the report client needs of the place where a connection's login lives. report-api declares it,
 * so that it knows nothing of PostgreSQL; src/history implements it.
 */
export interface ConnectionAuthStore {
  /** The current login (fresh from the store: another process may have logged in or out). */
  loginState(): Promise<LoginState>;
  /**
   * Records that the refresh grant was refused for `loginId`, so every process fails at once without asking the
   * token endpoint until the next login. A newer login (another id) is left alone.
   */
  markLoginRequired(loginId: string, reason: string): Promise<void>;
  /** Records the scope of the latest token response (undefined when it named none). */
  recordScope(scope: string | undefined): Promise<void>;
}

/** A report to start (docs/report-export-service.md "Endpoints" #1, "Start-report request body"). */
export interface StartReportRequest {
  /** Client number, digits. */
  mandant: string;
  /** Report name, sub folders separated by "/", see encodeReportName. */
  name: string;
  outputType: OutputType;
  /** Rows per page, >= 10 (docs/report-export-service.md "Limits"). */
  paging: number;
  /** The report's own input parameters, name to value. */
  parameters: Record<string, string>;
  /** jobs.yaml job name, only for error messages. */
  job?: string;
}

/** Job states (docs/report-export-service.md "States and transitions"). */
export type ReportJobState = 'Running' | 'FinishedSuccess' | 'FinishedError';

/** A job as the server returns it (docs/report-export-service.md "Resources and their fields": Job). Timestamps are ISO 8601 strings. */
export interface ReportJob {
  id: string;
  state: ReportJobState;
  /** '' while Running; rows=<n>;pages=<n> on success; the error text (verbatim) on FinishedError. */
  message: string;
  submittedAt?: string;
  startedAt?: string;
  finishedAt?: string;
  /** Present (empty) in the rights-failure answer. */
  result?: unknown[];
}

/** A job that ended FinishedSuccess, with the counts its message announced. */
export interface FinishedReport {
  jobId: string;
  /** Data rows of the whole result. */
  rows: number;
  /** Output pages (rows / paging, rounded up). */
  pages: number;
  job: ReportJob;
  /** Status polls it took to see the job finished. */
  polls?: number;
}

/**
 * One output page as a byte stream (docs/report-export-service.md "Endpoints" #3, "Output page shapes"). Breaks of the connection
 * are resumed transparently: `body` yields every byte of the page exactly once.
 */
export interface PageStream {
  page: number;
  /** Content-Type header of the page, e.g. application/json, text/plain, text/xml. */
  contentType: string;
  /** Content-Length header in bytes when the server sent one (txt), else undefined (chunked). */
  contentLength?: number;
  /** The page bytes; backpressure flows to the HTTP connection. Errors: PageBrokenError, AbortedError. */
  body: Readable;
  /** How many times the page had to be re-requested so far. */
  resumes(): number;
}

/** The Report Export Service client; see makeReportClient. */
export interface ReportClient {
  /** Token endpoint from the discovery document, read once per client (docs/report-export-service.md "Obtaining the token endpoint"). */
  readonly tokenEndpoint: string;
  /**
   * Starts a report (docs/report-export-service.md "Endpoints" #1). The POST itself is not cut by `signal` (so that a created job is
   * never lost); when `signal` aborted meanwhile, the job is deleted and AbortedError thrown.
   * @throws ReportNameError, ConfigError (paging < 10), RightsFailureError (FinishedError with result: [] at
   *   start; job already deleted), ReportFailedError (other FinishedError at start, e.g. unknown report; deleted),
   *   AccessForbiddenError, UnauthorizedError, TokenError, TransientHttpError, HttpError, AbortedError
   */
  startReport(req: StartReportRequest, signal?: AbortSignal): Promise<ReportJob>;
  /**
   * Polls the job (docs/report-export-service.md "Endpoints" #2) every pollIntervalMs, growing x1.5 up to pollMaxIntervalMs (spec
   * "Recommended values": 250 ms to start with).
   * @param startedAt when the server answered the start request (Date.now() ms): the first poll and pollTimeoutMs
   *   count from there, so that work done in between (recording the job's id) does not delay the poll. Default now.
   * @throws ReportFailedError (server message verbatim), PollTimeoutError (after pollTimeoutMs), HttpError,
   *   AccessForbiddenError, UnauthorizedError, TokenError, TransientHttpError, AbortedError
   */
  waitForJob(jobId: string, signal?: AbortSignal, startedAt?: number): Promise<FinishedReport>;
  /**
   * Opens one output page (docs/report-export-service.md "Endpoints" #3), 1-based.
   * @returns the page stream, or null when the server answers 404 with an empty body (docs/report-export-service.md "Errors": the
   *   previous page was the last)
   * @throws HttpError (404 with a body, e.g. unknown job; other statuses), AccessForbiddenError, UnauthorizedError,
   *   TokenError, TransientHttpError, AbortedError
   */
  openPage(jobId: string, page: number, signal?: AbortSignal): Promise<PageStream | null>;
  /**
   * Closes the job (docs/report-export-service.md "Endpoints" #4). 404 counts as done. Transient failures are retried; never
   * cancelled by a run's abort. @throws HttpError, UnauthorizedError, TokenError, TransientHttpError
   */
  deleteJob(jobId: string): Promise<void>;
  /** Closes the HTTP agent (after in-flight requests). The Redis connection is the caller's. Idempotent. */
  close(): Promise<void>;
}
