/**
 * Errors of the Report Export Service client (docs/report-export-service.md "Errors"; docs/architecture.md "Errors").
 *
 * Each class has a stable code from src/errors.ts and the context on-call staff need: the stage of
 * the run, the HTTP status and the server's own words verbatim. Messages are built from names, ids and
 * statuses only: never from credentials, tokens or request headers.
 */
import { EtlError, type ProblemDetails } from '../errors.ts';
import { boundText } from '../failure-text.ts';
import type { RunStage } from '../vocabulary.ts';

/** The stages of a run the report client works in. */
export type ReportApiStage = Extract<RunStage, 'config' | 'token' | 'start' | 'poll' | 'fetch' | 'delete'>;

/** A report name breaks docs/report-export-service.md "Report naming rules"; thrown before any request is sent. Not retryable. */
export class ReportNameError extends EtlError {
  constructor(message: string, details: Record<string, unknown>) {
    super('REPORT_NAME_INVALID', message, { retryable: false, stage: 'config', details });
  }
}

/**
 * The token endpoint (or the discovery document that names it) failed (docs/report-export-service.md "Authentication").
 * `oauthError` is the OAuth `error` field of the answer when there was one. Retryable unless the
 * endpoint answered with a 4xx (wrong credentials do not heal by themselves).
 */
export class TokenError extends EtlError {
  readonly oauthError: string | undefined;
  constructor(message: string, options: { httpStatus?: number; oauthError?: string; cause?: unknown } = {}) {
    super('TOKEN_FAILED', message, {
      stage: 'token',
      httpStatus: options.httpStatus,
      cause: options.cause,
      retryable: options.httpStatus === undefined || options.httpStatus >= 500,
      details: options.oauthError === undefined ? undefined : { oauthError: options.oauthError },
    });
    this.oauthError = options.oauthError;
  }
}

/**
 * A user-dependent service user must log in again (docs/report-export-service.md "User-dependent service user", Refresh rules 4-5:
 * the refresh token expired, the user logged out, or another API client using the same user regenerated it), or
 * never logged in. Stage `token`, not retryable: nothing heals until someone runs `report-etl login <connection>`.
 * `reason` is the server's OAuth error (e.g. invalid_grant) or why no login exists; it never holds a token.
 */
export class LoginRequiredError extends EtlError {
  readonly connection: string;
  readonly reason: string;
  constructor(connection: string, reason: string, options: { httpStatus?: number; oauthError?: string } = {}) {
    super(
      'LOGIN_REQUIRED',
      `connection "${connection}": the user-dependent service user must log in again (${reason}); run \`report-etl login ${connection}\``,
      {
        stage: 'token',
        retryable: false,
        httpStatus: options.httpStatus,
        details: {
          connection,
          reason,
          command: `report-etl login ${connection}`,
          ...(options.oauthError ? { oauthError: options.oauthError } : {}),
        },
      },
    );
    this.connection = connection;
    this.reason = boundText(reason);
  }
}

/**
 * The scopes of the access token a refused call used, as the service's description suggests for diagnosis (docs/report-export-service.md "Client credentials
 * grant" rule 4: "The scope list helps diagnose access problems"): ` (token scopes: a b)`, or '' when the token
 * response named none.
 */
export function scopeNote(tokenScope: string | undefined): string {
  return tokenScope === undefined ? '' : ` (token scopes: ${tokenScope.trim() === '' ? 'none' : tokenScope.trim()})`;
}

/** A report_api call was answered 401 twice: once with the cached token, once with a fresh one. */
export class UnauthorizedError extends EtlError {
  constructor(method: string, path: string, stage: ReportApiStage) {
    super('UNAUTHORIZED', `${method} ${path} was refused with 401 even with a freshly obtained access token`, {
      stage,
      httpStatus: 401,
    });
  }
}

/**
 * Starting the report was answered 200 with state FinishedError (docs/report-export-service.md "States and transitions": the
 * service user lacks the report application right or the report licence). `jobId` is the id of that
 * job when the server gave one, so it can still be deleted. Not retryable.
 */
export class RightsFailureError extends EtlError {
  readonly jobId: string | undefined;
  constructor(reportName: string, serverMessage: string, jobId: string | undefined, tokenScope?: string) {
    super(
      'RIGHTS_FAILURE',
      `report "${reportName}" was refused at start (missing report application right or report licence?): ${serverMessage}${scopeNote(tokenScope)}`,
      {
        retryable: false,
        stage: 'start',
        httpStatus: 200,
        serverMessage,
        details: { reportJobId: jobId, ...(tokenScope !== undefined ? { tokenScopes: tokenScope } : {}) },
      },
    );
    this.jobId = jobId;
  }
}

/**
 * HTTP 403 (docs/report-export-service.md "Errors": the service user lacks the interface access option). `serverMessage` is the
 * SvcServletExceptionMessage (or ServletExceptionMessage) header, `problem` the problem+json body.
 * A 403 with neither may mean the data-science licence option is missing; the message says so.
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
    super(
      'ACCESS_FORBIDDEN',
      (said !== undefined
        ? `${method} ${path} was refused with 403: ${said}`
        : `${method} ${path} was refused with 403 without any message: the service user may lack the data-science licence option (docs/report-export-service.md "Errors")`) +
        scopeNote(tokenScope),
      {
        retryable: false,
        stage,
        httpStatus: 403,
        serverMessage,
        problem,
        ...(tokenScope !== undefined ? { details: { tokenScopes: tokenScope } } : {}),
      },
    );
  }
}

/** The report job ended in FinishedError; `serverMessage` is the job's message verbatim. Not retryable. */
export class ReportFailedError extends EtlError {
  readonly jobId: string;
  constructor(jobId: string, serverMessage: string) {
    super('REPORT_FAILED', `report job ${jobId} failed: ${serverMessage}`, {
      retryable: false,
      stage: 'poll',
      serverMessage,
      details: { reportJobId: jobId },
    });
    this.jobId = jobId;
  }
}

/** The job stayed Running longer than the connection's pollTimeoutMs. */
export class PollTimeoutError extends EtlError {
  readonly jobId: string;
  constructor(jobId: string, waitedMs: number) {
    super('POLL_TIMEOUT', `report job ${jobId} was still Running after ${waitedMs} ms (pollTimeoutMs)`, {
      stage: 'poll',
      details: { reportJobId: jobId, waitedMs },
    });
    this.jobId = jobId;
  }
}

/** A failure a retry may cure (connection reset, timeout, 500/502/503/504), after the attempts ran out or per attempt. */
export class TransientHttpError extends EtlError {
  constructor(message: string, options: { stage: ReportApiStage; httpStatus?: number; cause?: unknown }) {
    super('HTTP_TRANSIENT', message, {
      stage: options.stage,
      httpStatus: options.httpStatus,
      cause: options.cause,
      retryable: true,
    });
  }
}

/** What each network code of {@link ServerUnreachableError} means, in words. */
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

/** The network codes that mean the server could not be reached at all (see {@link ServerUnreachableError}). */
export const UNREACHABLE_CODES: ReadonlySet<string> = new Set(Object.keys(UNREACHABLE_REASONS));

/**
 * The server could not be reached at all: connection refused, host name not found or its lookup failed
 * (ENOTFOUND, EAI_AGAIN), host or network unreachable, connect timeout; for the discovery document, the token
 * endpoint and every {report_api} call alike. Retryable: a server that is down may come back. (Whether the
 * request may still have got through, for a start, is decided by `isNotSentError` in http.ts.) The message names the server by scheme, host and port only
 * (never user info of the URL) and says what to check; `details` holds `networkCode` and `server`.
 */
export class ServerUnreachableError extends EtlError {
  /** The system or undici code, e.g. ECONNREFUSED, ENOTFOUND, UND_ERR_CONNECT_TIMEOUT. */
  readonly networkCode: string;
  /**
   * @param url the absolute URL of the request (only its origin and path go into the message)
   * @param networkCode one of {@link UNREACHABLE_CODES}
   */
  constructor(method: string, url: string, stage: ReportApiStage, networkCode: string, cause?: unknown) {
    const u = new URL(url);
    const server = `${u.protocol}//${u.host}`;
    const reason = UNREACHABLE_REASONS[networkCode] ?? 'unreachable';
    super(
      'SERVER_UNREACHABLE',
      `${method} ${u.pathname} failed: the server ${server} cannot be reached (${reason}, ${networkCode}); ` +
        'check that baseUrl in jobs.yaml is right, that the server is up, and that the network (DNS, proxy, firewall) lets this machine reach it',
      { stage, cause, retryable: true, details: { networkCode, server } },
    );
    this.networkCode = networkCode;
  }
}

/** An answer with a status (or body) the service's description does not lead us to expect; carries a snippet of the body. */
export class HttpError extends EtlError {
  constructor(
    message: string,
    options: { stage: ReportApiStage; httpStatus?: number; bodySnippet?: string; cause?: unknown },
  ) {
    super('HTTP_UNEXPECTED', options.bodySnippet ? `${message}: ${options.bodySnippet}` : message, {
      stage: options.stage,
      httpStatus: options.httpStatus,
      cause: options.cause,
      retryable: false,
      details: options.bodySnippet === undefined ? undefined : { bodySnippet: options.bodySnippet },
    });
  }
}

/** A page broke off and could not be resumed consistently (re-fetched bytes differ, too many resumes, page gone). */
export class PageBrokenError extends EtlError {
  constructor(jobId: string, page: number, reason: string, cause?: unknown) {
    super('PAGE_BROKEN', `page ${page} of report job ${jobId} broke off and could not be resumed: ${reason}`, {
      stage: 'fetch',
      cause,
      details: { reportJobId: jobId, page },
    });
  }
}

/**
 * A login of a user-dependent service user did not succeed: the authorization redirect carried an error
 * (docs/report-export-service.md "Errors": invalid_scope, with the server's error_description in `serverMessage`), its `state` was forged,
 * replayed or expired (RFC 6749 section 10.12), or the token endpoint refused the code. The message says what to do.
 */
export class LoginFailedError extends EtlError {
  readonly oauthError: string | undefined;
  constructor(message: string, options: { oauthError?: string; serverMessage?: string; httpStatus?: number } = {}) {
    super('LOGIN_FAILED', message, {
      stage: 'token',
      retryable: false,
      httpStatus: options.httpStatus,
      serverMessage: options.serverMessage,
      details: options.oauthError === undefined ? undefined : { oauthError: options.oauthError },
    });
    this.oauthError = options.oauthError;
  }
}
