/** What the report client exchanges with its callers (docs/report-export-service.md "Resources and their fields"). */
import type { Readable } from 'node:stream';
import type { Redis } from 'ioredis';
import type { OutputType } from '../vocabulary.ts';
import type { Logger } from '../logger.ts';
import type { PathEncoding } from './report-name.ts';
import type { AuthKind, CredentialsWay } from './report-rules.ts';

/**
 * A jobs.yaml connection as src/config validated it (docs/report-export-service.md "Authentication", "Report naming
 * rules"); times in ms. `clientSecret` is required for client_credentials (the default `auth`); authorization_code
 * needs ReportClientOptions.authStore. `tokenOrigin` is the origin off baseUrl's that discovery may name.
 */
export interface ReportConnection {
  baseUrl: string;
  auth?: AuthKind;
  clientId: string;
  clientSecret?: string | undefined;
  credentials: CredentialsWay;
  /** What a login requests (authorization_code; at most 25 scopes). */
  scopes?: string[];
  redirectUri?: string | undefined;
  tokenOrigin?: string | undefined;
  pathEncoding: PathEncoding;
  requestTimeoutMs: number;
  /** First job status poll interval, growing to pollMaxIntervalMs; a job Running past pollTimeoutMs fails. */
  pollIntervalMs: number;
  pollMaxIntervalMs: number;
  pollTimeoutMs: number;
}

/**
 * Options of makeReportClient: `redis` holds the token cache every process shares (keys under `keyPrefix`, default
 * 'report-etl:'); `signal` aborts reading the discovery document; `retry` defaults to DEFAULT_RETRY (http.ts); the
 * token is renewed `tokenRenewBeforeSeconds` (default 30, at most half its lifetime) before it expires.
 */
export interface ReportClientOptions {
  connection: ReportConnection;
  /** The connection's jobs.yaml name, for logs and errors. */
  connectionName: string;
  redis: Redis;
  keyPrefix?: string;
  signal?: AbortSignal;
  logger?: Logger;
  retry?: { attempts?: number; baseDelayMs?: number; maxDelayMs?: number };
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
  loginState(): Promise<LoginState>;
  /** Records that the refresh grant was refused for `loginId` (a newer login is left alone). */
  markLoginRequired(loginId: string, reason: string): Promise<void>;
  /** Records the scope of the latest token response (undefined when it named none). */
  recordScope(scope: string | undefined): Promise<void>;
}

/**
 * A report to start (docs/report-export-service.md "Endpoints" #1, "Start-report request body"): `mandant` is the
 * client number (digits), `name` sub folders separated by "/" (encodeReportName), `paging` rows per page (>= 10),
 * `job` the jobs.yaml job name for error messages.
 */
export interface StartReportRequest {
  mandant: string;
  name: string;
  outputType: OutputType;
  paging: number;
  parameters: Record<string, string>;
  job?: string;
}

/**
 * A job as the server returns it (docs/report-export-service.md "Resources and their fields", "States and
 * transitions"); times ISO 8601. `message` is '' while Running, rows=<n>;pages=<n> on success, the error text on
 * FinishedError; `result` is present (empty) in the rights-failure answer.
 */
export interface ReportJob {
  id: string;
  state: 'Running' | 'FinishedSuccess' | 'FinishedError';
  message: string;
  submittedAt?: string;
  startedAt?: string;
  finishedAt?: string;
  result?: unknown[];
}

/** A job that ended FinishedSuccess, with the data rows and pages its message announced and the polls it took. */
export interface FinishedReport {
  jobId: string;
  rows: number;
  pages: number;
  job: ReportJob;
  polls?: number;
}

/**
 * One output page as a byte stream (docs/report-export-service.md "Endpoints" #3); breaks of the connection are
 * resumed: `body` yields every byte of the page exactly once, with backpressure to the HTTP connection (errors:
 * PageBrokenError, AbortedError). `contentLength` is set when the server sent one (txt).
 */
export interface PageStream {
  page: number;
  contentType: string;
  contentLength?: number;
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
   * pollMaxIntervalMs; the first poll and pollTimeoutMs count from `startedAt` (Date.now() ms; default now).
   * @param onPoll called after each poll the server answered, with the polls so far (1-based)
   * @throws ReportFailedError (server message verbatim), PollTimeoutError (after pollTimeoutMs), HttpError,
   *   AccessForbiddenError, UnauthorizedError, TokenError, TransientHttpError, AbortedError
   */
  waitForJob(
    jobId: string,
    signal?: AbortSignal,
    startedAt?: number,
    onPoll?: (polls: number) => void,
  ): Promise<FinishedReport>;
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
