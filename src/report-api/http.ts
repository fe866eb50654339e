/**
 * HTTP for the report client: one undici Agent per client (keep-alive), per-request timeouts, the table
 * of transient failures, retried with the one backoff (backoff.ts).
 */
import type { Dispatcher } from 'undici';
import { Agent, request } from 'undici';
import { retry, type RetryPolicy } from '../backoff.ts';
import { AbortedError, EtlError } from '../errors.ts';
import { boundText, redactJson, redactor } from '../failure-text.ts';
import type { Logger } from '../logger.ts';
import {
  HttpError,
  ServerUnreachableError,
  TransientHttpError,
  UNREACHABLE_CODES,
  type ReportApiStage,
} from './errors.ts';

export { backoffDelayMs, sleep, type RetryPolicy } from '../backoff.ts';

/** Defaults of {@link RetryPolicy}: 5 attempts, 200 ms base, 10 s cap. */
export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseDelayMs: 200, maxDelayMs: 10_000 };

/** HTTP statuses worth another attempt (docs/architecture.md "Errors": 5xx; 429 for good measure). */
export const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

/** Network-level error codes worth another attempt: resets, socket closes, timeouts. */
const TRANSIENT_CODES =
  /^(ECONNRESET|ECONNREFUSED|ECONNABORTED|EPIPE|ETIMEDOUT|EAI_AGAIN|UND_ERR_(SOCKET|CONNECT_TIMEOUT|HEADERS_TIMEOUT|BODY_TIMEOUT|CLOSED|RES_CONTENT_LENGTH_MISMATCH|REQ_CONTENT_LENGTH_MISMATCH))$/;

/** Whether `err` is a failure a retry may cure: a {@link TransientHttpError}, a {@link ServerUnreachableError} or a network error code. */
export function isTransientError(err: unknown): boolean {
  if (err instanceof EtlError) return err.code === 'HTTP_TRANSIENT' || err.code === 'SERVER_UNREACHABLE';
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && TRANSIENT_CODES.test(code);
}

/**
 * Unreachable codes that also prove a request was never sent: no connection was ever made. Host or network
 * unreachable are left out: the kernel may report them on a connection already in use, after the bytes went out.
 */
const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_NONAME',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * The code of the network failure in `err` (or its causes, or the errors of an AggregateError) that shows the server
 * could not be reached at all, one of {@link UNREACHABLE_CODES}; undefined for anything else.
 */
export function unreachableCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof ServerUnreachableError) return e.networkCode;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) return code;
    // Happy eyeballs (several addresses of one host) fail with an AggregateError of one error per address.
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors)) {
      const codes = errors.map((x: unknown) => (x as { code?: unknown } | null)?.code);
      if (codes.length > 0 && codes.every((c) => typeof c === 'string' && UNREACHABLE_CODES.has(c)))
        return codes[0] as string;
    }
  }
  return undefined;
}

/**
 * Whether `err` shows the request was not acted on: never delivered (connection refused, name lookup failed,
 * connect timeout, looking through `cause`), or refused before processing (429 Too Many Requests, 503 Service
 * Unavailable). Only such failures may be retried for a call that is not idempotent: after a reset, a timeout or
 * a gateway's 502/504 the server may already have acted on it.
 */
export function isNotSentError(err: unknown): boolean {
  if (err instanceof TransientHttpError && (err.httpStatus === 429 || err.httpStatus === 503)) return true;
  const code = unreachableCode(err);
  return code !== undefined && NOT_SENT_CODES.has(code);
}

/**
 * Runs `fn` until it succeeds, retrying transient failures ({@link isTransientError}) up to
 * `policy.attempts` attempts in all, sleeping {@link backoffDelayMs} between them.
 * @param fn gets the 1-based attempt number
 * @param retryable which failures to retry (default {@link isTransientError})
 * @throws the last error when it is not transient or the attempts ran out; AbortedError on abort
 */
export async function retryTransient<T>(
  fn: (attempt: number) => Promise<T>,
  policy: RetryPolicy,
  signal: AbortSignal | undefined,
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void,
  retryable: (err: unknown) => boolean = isTransientError,
): Promise<T> {
  return retry(fn, { policy, signal, onRetry, retryable });
}

/**
 * Reads at most `maxBytes` of an answer's body, then drops the rest unread.
 * @returns the bytes read and how many more the body had: 0 when read whole, by Content-Length, else Infinity
 */
export async function readBounded(
  res: Dispatcher.ResponseData,
  maxBytes: number,
): Promise<{ bytes: Buffer; more: number }> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      if (size > maxBytes) break;
    }
  } finally {
    res.body.destroy();
  }
  const bytes = Buffer.concat(chunks);
  if (size <= maxBytes) return { bytes, more: 0 };
  const length = Number(res.headers['content-length']);
  return { bytes: bytes.subarray(0, maxBytes), more: length >= size ? length - maxBytes : Infinity };
}

/** Reads the beginning of an answer's body for an error message: `redact`ed, at most `maxChars`. Never throws. */
export async function readSnippet(
  res: Dispatcher.ResponseData,
  redact: (text: string) => string,
  maxChars = 300,
): Promise<string> {
  try {
    const { bytes, more } = await readBounded(res, maxChars * 4 + 1024);
    return boundText(redact(bytes.toString('utf8')).replace(/\s+/g, ' ').trim(), maxChars, more);
  } catch {
    return ''; // a snippet is best effort
  }
}

/**
 * The most a start, poll or discovery answer may hold, in bytes (1 MiB). Each is a small JSON object
 * (docs/report-export-service.md "Resources and their fields"); a server that sends more is broken or hostile, and
 * reading it whole would take the worker's memory with it.
 */
export const MAX_ANSWER_BYTES = 1024 * 1024;

/**
 * Reads a small JSON answer (a job, the discovery document), never more than `maxBytes` of it.
 * @returns the parsed JSON, every string `redact`ed
 * @throws HttpError (HTTP_UNEXPECTED, not retryable) when the body is larger than `maxBytes` (the rest is not read)
 *   or is not JSON
 */
export async function readJsonAnswer(
  res: Dispatcher.ResponseData,
  stage: ReportApiStage,
  redact: (text: string) => string,
  maxBytes = MAX_ANSWER_BYTES,
): Promise<unknown> {
  const { bytes, more } = await readBounded(res, maxBytes);
  if (more > 0) {
    throw new HttpError(
      `the server's answer (stage ${stage}) is larger than ${maxBytes} bytes, far more than any job or discovery ` +
        'answer holds; it was not read further',
      { stage, httpStatus: res.statusCode },
    );
  }
  const text = bytes.toString('utf8');
  try {
    return redactJson(JSON.parse(text), redact);
  } catch {
    // No cause: JSON.parse quotes the text.
    throw new HttpError(`the server's answer (stage ${stage}) is not JSON`, {
      stage,
      httpStatus: res.statusCode,
      bodySnippet: boundText(redact(text).replace(/\s+/g, ' ').trim(), 300),
    });
  }
}

/** One HTTP request as the transport sends it. */
export interface SendRequest {
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  stage: ReportApiStage;
}

/** Options of {@link HttpTransport}. */
export interface HttpTransportOptions {
  /** Headers and body idle timeout of one request in ms (connection.requestTimeoutMs). */
  timeoutMs: number;
  logger: Logger;
  /** Max sockets per origin; default 32. */
  connections?: number;
  /** The connection's credentials ({@link credentialSecrets}): never quoted from an answer. */
  secrets?: readonly (string | undefined)[];
}

/** What a server may echo of a client's credentials: the secret, and `id:secret` (a Basic header's base64). */
export function credentialSecrets(clientId: string, clientSecret: string | undefined): string[] {
  return clientSecret ? [clientSecret, `${clientId}:${clientSecret}`] : [];
}

/**
 * A keep-alive undici Agent plus one-attempt requests that classify failures:
 * network errors, timeouts and {@link TRANSIENT_STATUSES} become {@link TransientHttpError}, an abort
 * becomes AbortedError; every other status is returned for the caller to judge.
 */
export class HttpTransport {
  readonly agent: Agent;
  private readonly timeoutMs: number;
  private readonly logger: Logger;
  private closing: Promise<void> | undefined;
  private readonly secrets: readonly (string | undefined)[];
  private readonly tokens: string[] = [];
  private redactor: ((text: string) => string) | undefined;

  constructor(options: HttpTransportOptions) {
    this.timeoutMs = options.timeoutMs;
    this.logger = options.logger;
    this.secrets = options.secrets ?? [];
    this.agent = new Agent({
      connections: options.connections ?? 32,
      keepAliveTimeout: 10_000,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
  }

  /** Adds an access token this transport sends to what {@link redact} removes (the last 4 are kept). */
  rememberToken(token: string): void {
    if (this.tokens.includes(token)) return;
    if (this.tokens.push(token) > 4) this.tokens.shift();
    this.redactor = undefined;
  }

  /** `text` without the connection's credentials or a remembered access token, in any form (failure-text.ts). */
  readonly redact = (text: string): string => (this.redactor ??= redactor([...this.secrets, ...this.tokens]))(text);

  /**
   * Sends one request (no retry). The caller owns the returned body and must consume or destroy it.
   * @throws ServerUnreachableError (refused, name not found, unreachable, connect timeout), TransientHttpError
   *   (other network errors, timeouts, 429/5xx), AbortedError (signal aborted)
   */
  async send(req: SendRequest): Promise<Dispatcher.ResponseData> {
    const path = new URL(req.url).pathname;
    const started = performance.now();
    let res: Dispatcher.ResponseData;
    try {
      res = await request(req.url, {
        dispatcher: this.agent,
        method: req.method,
        headers: req.headers,
        body: req.body,
        signal: req.signal,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
    } catch (err) {
      const ms = Math.round(performance.now() - started);
      if (req.signal?.aborted) throw new AbortedError(req.signal.reason);
      const code = (err as { code?: string }).code ?? (err as Error).name;
      this.logger.debug({ method: req.method, path, error: code, ms }, 'report-api request failed');
      const unreachable = unreachableCode(err);
      if (unreachable !== undefined) throw new ServerUnreachableError(req.method, req.url, req.stage, unreachable, err);
      if (isTransientError(err)) {
        throw new TransientHttpError(`${req.method} ${path} failed: ${code}`, { stage: req.stage, cause: err });
      }
      throw err;
    }
    const ms = Math.round(performance.now() - started);
    this.logger.debug({ method: req.method, path, status: res.statusCode, ms }, 'report-api request');
    if (TRANSIENT_STATUSES.has(res.statusCode)) {
      // A token endpoint's error page may echo the form it got (client_secret and all): never quote it.
      const snippet =
        req.stage === 'token' ? await res.body.dump().then(() => '') : await readSnippet(res, this.redact);
      throw new TransientHttpError(`${req.method} ${path} answered ${res.statusCode}${snippet ? `: ${snippet}` : ''}`, {
        stage: req.stage,
        httpStatus: res.statusCode,
      });
    }
    return res;
  }

  /**
   * Closes the agent after in-flight requests, destroying it when they take longer than
   * min(timeoutMs, 5 s) (e.g. a page body nobody reads any more). A second call waits for the first.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      let timer: NodeJS.Timeout | undefined;
      // agent.close() never settles once destroy() ran, so race the two rather than await close().
      const forced = new Promise<void>((resolve) => {
        timer = setTimeout(
          () => void this.agent.destroy().then(resolve, () => resolve()),
          Math.min(this.timeoutMs, 5_000),
        );
      });
      await Promise.race([this.agent.close().catch(() => {}), forced]);
      clearTimeout(timer);
    })();
    return this.closing;
  }
}
