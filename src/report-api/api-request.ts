/**
 * Authorized calls of {report_api} (docs/report-export-service.md "Endpoints", common headers): Bearer token from the shared
 * cache, Accept: application/json, Content-Type: application/json on POST; one retry with a new token
 * after a 401; retries of transient failures; 403 turned into AccessForbiddenError (docs/report-export-service.md "Errors").
 */
import type { Dispatcher } from 'undici';
import type { ProblemDetails } from '../errors.ts';
import { boundText, MAX_TEXT_CHARS, redactJson } from '../failure-text.ts';
import type { Logger } from '../logger.ts';
import { AccessForbiddenError, UnauthorizedError, type ReportApiStage } from './errors.ts';
import { joinUrl } from './discovery.ts';
import {
  isNotSentError,
  isTransientError,
  readBounded,
  retryTransient,
  type HttpTransport,
  type RetryPolicy,
} from './http.ts';
import type { AccessTokens } from './token-cache.ts';

/** Path prefix of the report interface (docs/report-export-service.md: {report_api}). */
export const REPORT_API_PREFIX = '/api/svcreport/v1';

/** One call of {report_api}. */
export interface ApiCall {
  method: 'GET' | 'POST' | 'DELETE';
  /** Path below {report_api}, already encoded, e.g. `/jobs/<id>`. */
  path: string;
  stage: ReportApiStage;
  /** JSON request body (POST). */
  json?: unknown;
  /** Aborts backoff sleeps and token waits, and the request itself unless `abortInFlight` is false. */
  signal?: AbortSignal;
  /** Whether `signal` also cuts a request already sent (default true). */
  abortInFlight?: boolean;
  /**
   * False for a call the server must not see twice (starting a report creates a job whose id only its answer
   * tells): then only failures that prove the request was never delivered are retried (default true).
   */
  idempotent?: boolean;
}

/** What an {@link ApiCaller} needs. */
export interface ApiCallerOptions {
  baseUrl: string;
  http: HttpTransport;
  tokens: AccessTokens;
  retry: RetryPolicy;
  logger: Logger;
}

/** The most of a 403's problem body read, in bytes (docs/architecture.md "Limits"). */
export const MAX_PROBLEM_BYTES = 64 * 1024;

async function forbidden(
  res: Dispatcher.ResponseData,
  call: ApiCall,
  tokenScope: string | undefined,
  redact: (text: string) => string,
): Promise<AccessForbiddenError> {
  const header = res.headers['svcservletexceptionmessage'] ?? res.headers['servletexceptionmessage'];
  let said = Array.isArray(header) ? header.join('\n') : header;
  let problem: ProblemDetails | undefined;
  try {
    const { bytes, more } = await readBounded(res, MAX_PROBLEM_BYTES);
    const text = bytes.toString('utf8');
    // Too large for a problem body: its beginning stands for the server's words.
    if (more > 0) said ||= boundText(redact(text), MAX_TEXT_CHARS, more);
    else if (text.trim().length > 0) {
      const parsed: unknown = JSON.parse(text);
      if (parsed !== null && typeof parsed === 'object') problem = redactJson(parsed, redact) as ProblemDetails;
    }
  } catch {
    problem = undefined;
  }
  return new AccessForbiddenError(
    call.method,
    `${REPORT_API_PREFIX}${call.path}`,
    call.stage,
    said ? redact(said) : undefined,
    problem,
    tokenScope,
  );
}

/** Sends authorized {report_api} calls; see the module doc. */
export class ApiCaller {
  private readonly opts: ApiCallerOptions;

  constructor(opts: ApiCallerOptions) {
    this.opts = opts;
  }

  /** The scope of the access token in use (docs/report-export-service.md "Token response"), undefined when the server named none. */
  tokenScope(): string | undefined {
    return this.opts.tokens.scope();
  }

  /** Absolute URL of a {report_api} path. */
  url(path: string): string {
    return joinUrl(this.opts.baseUrl, REPORT_API_PREFIX + path);
  }

  /**
   * Sends the call. Returns every answer except 401, 403 and transient ones; the caller owns the body.
   * @throws AccessForbiddenError (403), UnauthorizedError (401 twice), TokenError, TransientHttpError
   *   (attempts exhausted), AbortedError
   */
  async send(call: ApiCall): Promise<Dispatcher.ResponseData> {
    const { http, tokens, retry, logger } = this.opts;
    const url = this.url(call.path);
    const body = call.json === undefined ? undefined : JSON.stringify(call.json);
    const requestSignal = call.abortInFlight === false ? undefined : call.signal;
    const attempt = (token: string): Promise<Dispatcher.ResponseData> => {
      http.rememberToken(token);
      const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
      if (call.method === 'POST') headers['content-type'] = 'application/json';
      return http.send({ method: call.method, url, headers, body, signal: requestSignal, stage: call.stage });
    };
    const res = await retryTransient(
      async () => {
        const token = await tokens.get(call.signal);
        const first = await attempt(token);
        if (first.statusCode !== 401) return first;
        await first.body.dump();
        await tokens.invalidate(token);
        const second = await attempt(await tokens.get(call.signal));
        if (second.statusCode !== 401) return second;
        await second.body.dump();
        throw new UnauthorizedError(call.method, `${REPORT_API_PREFIX}${call.path}`, call.stage);
      },
      retry,
      call.signal,
      (err, n, delayMs) =>
        logger.debug(
          { method: call.method, stage: call.stage, attempt: n, delayMs, err: (err as Error).message },
          'retrying',
        ),
      call.idempotent === false ? isNotSentError : isTransientError,
    );
    if (res.statusCode === 403) throw await forbidden(res, call, tokens.scope(), http.redact);
    return res;
  }
}
