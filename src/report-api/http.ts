/**
 * HTTP for the report client: one keep-alive undici Agent per client, per-request timeouts, which failures are
 * transient, bounded reads of answers (docs/architecture.md "Limits") and the one backoff (backoff.ts).
 */
import { Agent, request, type Dispatcher } from 'undici';
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

export type { RetryPolicy } from '../backoff.ts';

/** 5 attempts, 200 ms base, 10 s cap. */
export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseDelayMs: 200, maxDelayMs: 10_000 };

/** HTTP statuses worth another attempt (docs/architecture.md "Errors"). */
export const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

const TRANSIENT_CODES = new RegExp(
  '^(ECONNRESET|ECONNREFUSED|ECONNABORTED|EPIPE|ETIMEDOUT|EAI_AGAIN|UND_ERR_(SOCKET|CONNECT_TIMEOUT|HEADERS_TIMEOUT|' +
    'BODY_TIMEOUT|CLOSED|RES_CONTENT_LENGTH_MISMATCH|REQ_CONTENT_LENGTH_MISMATCH))$',
);

/** Whether a retry may cure `err`: a TransientHttpError, a ServerUnreachableError or a network error code. */
export function isTransientError(err: unknown): boolean {
  if (err instanceof EtlError) return err.code === 'HTTP_TRANSIENT' || err.code === 'SERVER_UNREACHABLE';
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && TRANSIENT_CODES.test(code);
}

// Unreachable codes that prove no connection was made. Host or network unreachable are left out: the kernel may
// report them on a connection in use, after the bytes went out.
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * The code (one of UNREACHABLE_CODES) of the failure in `err`, its causes or an AggregateError's errors, that shows
 * the server could not be reached at all; else undefined.
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
 * Whether `err` shows the request was not acted on: never delivered (refused, no such host, connect timeout) or
 * refused before processing (429, 503). Only these may be retried for a call that is not idempotent.
 */
export function isNotSentError(err: unknown): boolean {
  if (err instanceof TransientHttpError && (err.httpStatus === 429 || err.httpStatus === 503)) return true;
  const code = unreachableCode(err);
  return code !== undefined && NOT_SENT_CODES.has(code);
}

/** backoff.ts `retry` of `fn`, by default of {@link isTransientError} failures. @throws the last error */
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
 * Reads at most `maxBytes` of an answer's body and drops the rest unread.
 * @returns the bytes and how many more the body had: 0 when read whole, by Content-Length, else Infinity
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

/** The beginning of an answer's body for an error message: `redact`ed, at most 300 characters. Never throws. */
export async function readSnippet(res: Dispatcher.ResponseData, redact: (text: string) => string): Promise<string> {
  try {
    const { bytes, more } = await readBounded(res, 300 * 4 + 1024);
    return boundText(redact(bytes.toString('utf8')).replace(/\s+/g, ' ').trim(), 300, more);
  } catch {
    return ''; // a snippet is best effort
  }
}

/** The most a start, poll or discovery answer (a small JSON object) may hold, in bytes. */
export const MAX_ANSWER_BYTES = 1024 * 1024;

/**
 * Reads a small JSON answer (a job, the discovery document), at most {@link MAX_ANSWER_BYTES}.
 * @returns the parsed JSON, every string `redact`ed
 * @throws HttpError (not retryable) when the body is larger (the rest is not read) or not JSON
 */
export async function readJsonAnswer(
  res: Dispatcher.ResponseData,
  stage: ReportApiStage,
  redact: (text: string) => string,
): Promise<unknown> {
  const { bytes, more } = await readBounded(res, MAX_ANSWER_BYTES);
  if (more > 0) {
    throw new HttpError(
      `the server's answer (stage ${stage}) is larger than ${MAX_ANSWER_BYTES} bytes, far more than any job or ` +
        'discovery answer holds; it was not read further',
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

/** What a server may echo of a client's credentials: the secret, and `id:secret` (a Basic header's base64). */
export function credentialSecrets(clientId: string, clientSecret: string | undefined): string[] {
  return clientSecret ? [clientSecret, `${clientId}:${clientSecret}`] : [];
}

/**
 * A keep-alive Agent (32 sockets per origin) and one-attempt requests that classify failures: network errors,
 * timeouts and {@link TRANSIENT_STATUSES} throw, every other status is the caller's to judge.
 */
export class HttpTransport {
  readonly agent: Agent;
  private readonly timeoutMs: number;
  private readonly logger: Logger;
  private closing: Promise<void> | undefined;
  private readonly secrets: readonly (string | undefined)[];
  private readonly tokens: string[] = [];
  private redactor: ((text: string) => string) | undefined;

  /**
   * @param o.timeoutMs headers and body idle timeout of one request (connection.requestTimeoutMs)
   * @param o.secrets the connection's {@link credentialSecrets}: never quoted from an answer
   */
  constructor(o: { timeoutMs: number; logger: Logger; secrets?: readonly (string | undefined)[] }) {
    this.timeoutMs = o.timeoutMs;
    this.logger = o.logger;
    this.secrets = o.secrets ?? [];
    const timeouts = { headersTimeout: o.timeoutMs, bodyTimeout: o.timeoutMs };
    this.agent = new Agent({ connections: 32, keepAliveTimeout: 10_000, ...timeouts });
  }

  /** Adds an access token sent to what {@link redact} removes (the last 4 are kept). */
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
   *   (other network errors, timeouts, 429/5xx), HttpError (headers over undici's limit), AbortedError
   */
  async send(req: SendRequest): Promise<Dispatcher.ResponseData> {
    const path = new URL(req.url).pathname;
    const started = performance.now();
    let res: Dispatcher.ResponseData;
    try {
      const { method, headers, body, signal } = req;
      const timeouts = { headersTimeout: this.timeoutMs, bodyTimeout: this.timeoutMs };
      res = await request(req.url, { dispatcher: this.agent, method, headers, body, signal, ...timeouts });
    } catch (err) {
      const ms = Math.round(performance.now() - started);
      if (req.signal?.aborted) throw new AbortedError(req.signal.reason);
      const code = (err as { code?: string }).code ?? (err as Error).name;
      this.logger.debug({ method: req.method, path, error: code, ms }, 'report-api request failed');
      const unreachable = unreachableCode(err);
      if (unreachable !== undefined) throw new ServerUnreachableError(req.method, req.url, req.stage, unreachable, err);
      if (code === 'UND_ERR_HEADERS_OVERFLOW') {
        // Sent again, a broken or hostile server answers the same.
        throw new HttpError(`${req.method} ${path} failed: the answer's headers are larger than undici takes`, {
          stage: req.stage,
          cause: err,
        });
      }
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
      const said = `${res.statusCode}${snippet ? `: ${snippet}` : ''}`;
      throw new TransientHttpError(`${req.method} ${path} answered ${said}`, {
        stage: req.stage,
        httpStatus: res.statusCode,
      });
    }
    return res;
  }

  /** Closes the agent after in-flight requests, destroying it after min(timeoutMs, 5 s). Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      let timer: NodeJS.Timeout | undefined;
      // agent.close() never settles once destroy() ran, so race the two rather than await close().
      const forced = new Promise<void>((resolve) => {
        const destroy = () => void this.agent.destroy().then(resolve, () => resolve());
        timer = setTimeout(destroy, Math.min(this.timeoutMs, 5_000));
      });
      await Promise.race([this.agent.close().catch(() => {}), forced]);
      clearTimeout(timer);
    })();
    return this.closing;
  }
}
