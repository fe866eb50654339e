/** What the report client exchanges with its callers (docs/report-export-service.md "Resources and their fields"). */
import type { Readable } from 'node:stream';
import type { Redis } from 'ioredis';
import type { OutputType } from '../vocabulary.ts';
import type { Logger } from '../logger.ts';
import type { PathEncoding } from './report-name.ts';
import type { AuthKind, CredentialsWay } from './report-rules.ts';

/**
 * A jobs.yaml connection as src/config validated it (docs/report-export-service.md "Authentication", "Report naming
 * rules"); times in ms.
 */
export interface ReportConnection {
  /** The service's {base_url}, e.g. https://erp.example.com. */
  baseUrl: string;
  /** Default client_credentials; authorization_code needs ReportClientOptions.authStore. */
  auth?: AuthKind;
  clientId: string;
  /** Required for client_credentials; for authorization_code only of a trusted (confidential) client. */
  clientSecret?: string | undefined;
  /** How the client-credentials token request carries them: Authorization Basic header, or form fields. */
  credentials: CredentialsWay;
  /** What a login requests (authorization_code; at most 25 scopes). */
  scopes?: string[];
  redirectUri?: string | undefined;
  /** The origin off baseUrl's that the discovery document may name for the token endpoint (discovery.ts). */
  tokenOrigin?: string | undefined;
  pathEncoding: PathEncoding;
  /** Timeout of one HTTP request. */
  requestTimeoutMs: number;
  /** First job status poll interval, growing to pollMaxIntervalMs. */
  pollIntervalMs: number;
  pollMaxIntervalMs: number;
  /** How long a report job may stay Running before the attempt fails. */
  pollTimeoutMs: number;
}

/** Options of makeReportClient. */
export interface ReportClientOptions {
  connection: ReportConnection;
  /** The connection's jobs.yaml name, for logs and errors. */
  connectionName: string;
  /** Holds the token cache shared by every process. */
  redis: Redis;
  /** Redis key prefix; default 'report-etl:'. */
  keyPrefix?: string;
  /** Aborts reading the discovery document (the only request made while the client is created). */
  signal?: AbortSignal;
  logger?: Logger;
  /** Retries of transient failures; default DEFAULT_RETRY (http.ts). */
  retry?: { attempts?: number; baseDelayMs?: number; maxDelayMs?: number };
  /** Renew the access token this many seconds before it expires; default 30 (at most half its lifetime). */
  tokenRenewBeforeSeconds?: number;
  /** The connection's login (required for authorization_code) and scope records (src/history/logins.ts). */
  authStore?: ConnectionAuthStore;
}

/**
 * Where a user-dependent connection stands: logged in (the decrypted refresh token, and a `loginId` new for every
 * login: an access token of another login is never used), or why runs wait for `report-etl login`.
 */
export type LoginState =
  { kind: 'logged_in'; login: { loginId: string; refreshToken: string } } | { kind: 'login_required'; reason: string };

/** Where a connection's login lives; declared here so that report-api knows nothing of PostgreSQL (src/history). */
export interface ConnectionAuthStore {
  /** The current login, fresh from the store. */
  loginState(): Promise<LoginState>;
  /** Records that the refresh grant was refused for `loginId` (a newer login is left alone). */
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

/** A job as the server returns it (docs/report-export-service.md "Resources and their fields"); times ISO 8601. */
export interface ReportJob {
  id: string;
  /** docs/report-export-service.md "States and transitions". */
  state: 'Running' | 'FinishedSuccess' | 'FinishedError';
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
 * One output page as a byte stream (docs/report-export-service.md "Endpoints" #3); breaks of the connection are
 * resumed: `body` yields every byte of the page exactly once.
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
  /** From the discovery document, read once per client. */
  readonly tokenEndpoint: string;
  /**
   * Starts a report (docs/report-export-service.md "Endpoints" #1). The POST is not cut by `signal` (a created job
   * must not be lost); when `signal` aborted meanwhile, the job is deleted and AbortedError thrown.
   * @throws ReportNameError, ConfigError (paging < 10), RightsFailureError (FinishedError with result: [] at
   *   start; job already deleted), ReportFailedError (other FinishedError at start, e.g. unknown report; deleted),
   *   AccessForbiddenError, UnauthorizedError, TokenError, TransientHttpError, HttpError, AbortedError
   */
  startReport(req: StartReportRequest, signal?: AbortSignal): Promise<ReportJob>;
  /**
   * Polls the job (docs/report-export-service.md "Endpoints" #2) every pollIntervalMs, growing x1.5 up to
   * pollMaxIntervalMs.
   * @param startedAt when the server answered the start (Date.now() ms; default now): the first poll and
   *   pollTimeoutMs count from there, not from after the caller recorded the job's id.
   * @throws ReportFailedError (server message verbatim), PollTimeoutError (after pollTimeoutMs), HttpError,
   *   AccessForbiddenError, UnauthorizedError, TokenError, TransientHttpError, AbortedError
   */
  waitForJob(jobId: string, signal?: AbortSignal, startedAt?: number): Promise<FinishedReport>;
  /**
   * Opens one output page (docs/report-export-service.md "Endpoints" #3), 1-based.
   * @returns the page stream, or null on 404 with an empty body (the previous page was the last)
   * @throws HttpError (404 with a body, e.g. unknown job; other statuses), AccessForbiddenError, UnauthorizedError,
   *   TokenError, TransientHttpError, AbortedError
   */
  openPage(jobId: string, page: number, signal?: AbortSignal): Promise<PageStream | null>;
  /**
   * Closes the job (docs/report-export-service.md "Endpoints" #4); 404 counts as done. Never cancelled by a run's
   * abort. @throws HttpError, UnauthorizedError, TokenError, TransientHttpError
   */
  deleteJob(jobId: string): Promise<void>;
  /** Closes the HTTP agent (after in-flight requests). The Redis connection is the caller's. Idempotent. */
  close(): Promise<void>;
}
