/**
 * Authorized calls of {report_api} (docs/report-export-service.md "Endpoints"): the shared Bearer token, JSON
 * headers, one retry with a new token after a 401, retries of transient failures, 403 as AccessForbiddenError.
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

/** Path prefix of {report_api}. */
const REPORT_API_PREFIX = '/api/svcreport/v1';

/** One call of {report_api}. */
interface ApiCall {
  method: 'GET' | 'POST' | 'DELETE';
  /** Path below {report_api}, already encoded, e.g. `/jobs/<id>`. */
  path: string;
  stage: ReportApiStage;
  /** JSON request body (POST). */
  json?: unknown;
  /** Aborts backoff sleeps, token waits, and the request itself unless `abortInFlight` is false (default true). */
  signal?: AbortSignal | undefined;
  abortInFlight?: boolean;
  /**
   * False for a call the server must not see twice (a start creates a job only its answer names): then only
   * failures that prove it was never delivered are retried (default true).
   */
  idempotent?: boolean;
}

/** The most of a 403's problem body read, in bytes (docs/architecture.md "Limits"). */
const MAX_PROBLEM_BYTES = 64 * 1024;

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
  const path = `${REPORT_API_PREFIX}${call.path}`;
  return new AccessForbiddenError(call.method, path, call.stage, said ? redact(said) : undefined, problem, tokenScope);
}

/** Sends authorized {report_api} calls; see the module doc. */
export type ApiCaller = ReturnType<typeof makeApiCaller>;

/** Makes an {@link ApiCaller}. */
export function makeApiCaller(o: {
  baseUrl: string;
  http: HttpTransport;
  tokens: AccessTokens;
  retry: RetryPolicy;
  logger: Logger;
}) {
  const { http, tokens, retry, logger } = o;
  /** The scope of the access token in use, undefined when the server named none. */
  const tokenScope = (): string | undefined => tokens.scope();
  /**
   * Sends the call. Returns every answer except 401, 403 and transient ones; the caller owns the body.
   * @throws AccessForbiddenError (403), UnauthorizedError (401 twice), TokenError, TransientHttpError
   *   (attempts exhausted), AbortedError
   */
  const send = async (call: ApiCall): Promise<Dispatcher.ResponseData> => {
    const url = joinUrl(o.baseUrl, REPORT_API_PREFIX + call.path);
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
      (err, attempt, delayMs) => {
        const { method, stage } = call;
        logger.debug({ method, stage, attempt, delayMs, err: (err as Error).message }, 'retrying');
      },
      call.idempotent === false ? isNotSentError : isTransientError,
    );
    if (res.statusCode === 403) throw await forbidden(res, call, tokens.scope(), http.redact);
    return res;
  };
  return { tokenScope, send };
}
