/**
 * Errors of the report client (docs/report-export-service.md "Errors"; docs/architecture.md "Errors"), their messages
 * built from names, ids and statuses only, never from credentials, tokens or request headers.
 */
import { EtlError, type ProblemDetails } from '../errors.ts';
import { boundText } from '../failure-text.ts';
import type { RunStage } from '../vocabulary.ts';

/** The stages of a run the report client works in. */
export type ReportApiStage = Extract<RunStage, 'config' | 'token' | 'start' | 'poll' | 'fetch' | 'delete'>;

type HttpOptions = { httpStatus?: number; oauthError?: string };
const oauthDetails = (oauthError: string | undefined) => (oauthError === undefined ? undefined : { oauthError });
const scopeDetails = (tokenScope: string | undefined) =>
  tokenScope === undefined ? undefined : { tokenScopes: tokenScope };

/** A report name breaks docs/report-export-service.md "Report naming rules"; thrown before any request. */
export class ReportNameError extends EtlError {
  constructor(message: string, details: Record<string, unknown>) {
    super('REPORT_NAME_INVALID', message, { retryable: false, stage: 'config', details });
  }
}

/**
 * The token endpoint or the discovery document failed (docs/report-export-service.md "Authentication"); `oauthError`
 * is the answer's OAuth `error`. Retryable unless it answered 4xx (wrong credentials do not heal by themselves).
 */
export class TokenError extends EtlError {
  readonly oauthError: string | undefined;
  constructor(message: string, options: HttpOptions & { cause?: unknown; retryable?: boolean } = {}) {
    super('TOKEN_FAILED', message, {
      stage: 'token',
      httpStatus: options.httpStatus,
      cause: options.cause,
      retryable: options.retryable ?? (options.httpStatus === undefined || options.httpStatus >= 500),
      details: oauthDetails(options.oauthError),
    });
    this.oauthError = options.oauthError;
  }
}

/**
 * A user-dependent service user must log in again (docs/report-export-service.md "Refresh" rules 4-5), or never
 * did. Not retryable: nothing heals until `report-etl login <connection>`. `reason` (the server's OAuth error, or
 * why no login exists) never holds a token.
 */
export class LoginRequiredError extends EtlError {
  readonly connection: string;
  readonly reason: string;
  constructor(connection: string, reason: string, options: HttpOptions = {}) {
    const command = `report-etl login ${connection}`;
    super(
      'LOGIN_REQUIRED',
      `connection "${connection}": the user-dependent service user must log in again (${reason}); run \`${command}\``,
      {
        stage: 'token',
        retryable: false,
        httpStatus: options.httpStatus,
        details: { connection, reason, command, ...oauthDetails(options.oauthError) },
      },
    );
    this.connection = connection;
    this.reason = boundText(reason);
  }
}

/** ` (token scopes: a b)` for a refused call, or '' when the token response named none (they help diagnose). */
function scopeNote(tokenScope: string | undefined): string {
  return tokenScope === undefined ? '' : ` (token scopes: ${tokenScope.trim() === '' ? 'none' : tokenScope.trim()})`;
}

/** A report_api call was answered 401 twice: with the cached token and with a fresh one. */
export class UnauthorizedError extends EtlError {
  constructor(method: string, path: string, stage: ReportApiStage) {
    const message = `${method} ${path} was refused with 401 even with a freshly obtained access token`;
    super('UNAUTHORIZED', message, { stage, httpStatus: 401 });
  }
}

/**
 * The start was answered 200 with FinishedError and `result: []` (docs/report-export-service.md "States and
 * transitions": no report application right or licence). `jobId` is that job's id, when given. Not retryable.
 */
export class RightsFailureError extends EtlError {
  readonly jobId: string | undefined;
  constructor(reportName: string, serverMessage: string, jobId: string | undefined, tokenScope?: string) {
    super(
      'RIGHTS_FAILURE',
      `report "${reportName}" was refused at start (missing report application right or report licence?): ` +
        serverMessage +
        scopeNote(tokenScope),
      {
        retryable: false,
        stage: 'start',
        httpStatus: 200,
        serverMessage,
        details: { reportJobId: jobId, ...scopeDetails(tokenScope) },
      },
    );
    this.jobId = jobId;
  }
}

/**
 * HTTP 403 (docs/report-export-service.md "Errors": no interface access option). `serverMessage` is the
 * SvcServletExceptionMessage (or ServletExceptionMessage) header, `problem` the problem+json body; with neither,
 * the message names the data-science licence option.
 */
export class AccessForbiddenError extends EtlError {
  constructor(
    method: string,
    path: string,
    stage: ReportApiStage,
    serverMessage: string | undefined,
    problem: ProblemDetails | undefined,
    tokenScope?: string,
  ) {
    const said = serverMessage ?? problem?.detail ?? problem?.title;
    const why =
      said ??
      'without any message: the service user may lack the data-science licence option ' +
        '(docs/report-export-service.md "Errors")';
    super(
      'ACCESS_FORBIDDEN',
      `${method} ${path} was refused with 403${said !== undefined ? ':' : ''} ${why}${scopeNote(tokenScope)}`,
      { retryable: false, stage, httpStatus: 403, serverMessage, problem, details: scopeDetails(tokenScope) },
    );
  }
}

/** The report job ended in FinishedError; `serverMessage` is the job's message verbatim. Not retryable. */
export class ReportFailedError extends EtlError {
  readonly jobId: string;
  constructor(jobId: string, serverMessage: string) {
    const details = { reportJobId: jobId };
    super('REPORT_FAILED', `report job ${jobId} failed: ${serverMessage}`, {
      retryable: false,
      stage: 'poll',
      serverMessage,
      details,
    });
    this.jobId = jobId;
  }
}

/** The job stayed Running longer than the connection's pollTimeoutMs. */
export class PollTimeoutError extends EtlError {
  readonly jobId: string;
  constructor(jobId: string, waitedMs: number) {
    const message = `report job ${jobId} was still Running after ${waitedMs} ms (pollTimeoutMs)`;
    super('POLL_TIMEOUT', message, { stage: 'poll', details: { reportJobId: jobId, waitedMs } });
    this.jobId = jobId;
  }
}

/** A failure a retry may cure (connection reset, timeout, 429, 5xx). */
export class TransientHttpError extends EtlError {
  constructor(message: string, options: { stage: ReportApiStage; httpStatus?: number; cause?: unknown }) {
    super('HTTP_TRANSIENT', message, { ...options, retryable: true });
  }
}

const UNREACHABLE_REASONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed',
  EAI_NONAME: 'host name not found',
  EHOSTUNREACH: 'host unreachable',
  EHOSTDOWN: 'host down',
  ENETUNREACH: 'network unreachable',
  ENETDOWN: 'network down',
  UND_ERR_CONNECT_TIMEOUT: 'connect timed out',
};

/** The network codes that mean the server could not be reached at all. */
export const UNREACHABLE_CODES: ReadonlySet<string> = new Set(Object.keys(UNREACHABLE_REASONS));

/**
 * The server could not be reached at all (one of {@link UNREACHABLE_CODES}); retryable. The message names scheme,
 * host and port only and what to check; `details` holds `networkCode` and `server`.
 */
export class ServerUnreachableError extends EtlError {
  readonly networkCode: string;
  constructor(method: string, url: string, stage: ReportApiStage, networkCode: string, cause?: unknown) {
    const u = new URL(url);
    const server = `${u.protocol}//${u.host}`;
    const reason = UNREACHABLE_REASONS[networkCode] ?? 'unreachable';
    super(
      'SERVER_UNREACHABLE',
      `${method} ${u.pathname} failed: the server ${server} cannot be reached (${reason}, ${networkCode}); ` +
        'check that baseUrl in jobs.yaml is right, that the server is up, and that the network (DNS, proxy, ' +
        'firewall) lets this machine reach it',
      { stage, cause, retryable: true, details: { networkCode, server } },
    );
    this.networkCode = networkCode;
  }
}

/** An answer the service's description does not lead us to expect; carries a snippet of the body. Not retryable. */
export class HttpError extends EtlError {
  constructor(
    message: string,
    options: { stage: ReportApiStage; httpStatus?: number; bodySnippet?: string; cause?: unknown },
  ) {
    const { bodySnippet, ...rest } = options;
    super('HTTP_UNEXPECTED', bodySnippet ? `${message}: ${bodySnippet}` : message, {
      ...rest,
      retryable: false,
      details: bodySnippet === undefined ? undefined : { bodySnippet },
    });
  }
}

/** A page broke off and could not be resumed consistently (bytes differ, too many resumes, page gone). */
export class PageBrokenError extends EtlError {
  constructor(jobId: string, page: number, reason: string, cause?: unknown) {
    const message = `page ${page} of report job ${jobId} broke off and could not be resumed: ${reason}`;
    super('PAGE_BROKEN', message, { stage: 'fetch', cause, details: { reportJobId: jobId, page } });
  }
}

/**
 * A login did not succeed: the redirect carried an error (e.g. invalid_scope, with the server's error_description
 * as `serverMessage`), its `state` was forged, replayed or expired, or the token endpoint refused the code.
 */
export class LoginFailedError extends EtlError {
  readonly oauthError: string | undefined;
  constructor(message: string, options: HttpOptions & { serverMessage?: string } = {}) {
    super('LOGIN_FAILED', message, {
      stage: 'token',
      retryable: false,
      httpStatus: options.httpStatus,
      serverMessage: options.serverMessage,
      details: oauthDetails(options.oauthError),
    });
    this.oauthError = options.oauthError;
  }
}
