/**
 * Typed errors with stable codes (docs/architecture.md "Errors"): every deliberate error is an {@link EtlError} with a
 * `code`, whether a retry can help, the stage of the run, the HTTP status and the server's own words
 * (docs/report-export-service.md "Errors"). Messages are built from names and ids, never from credentials or headers.
 */
import { boundJson, boundText, MAX_MESSAGE_CHARS } from './failure-text.ts';
import type { RunStage } from './vocabulary.ts';

/** Stable error codes. They are written to `etl.run_errors.error_kind`; never rename one. */
export type ErrorCode =
  | 'CONFIG_INVALID'
  | 'REPORT_NAME_INVALID'
  | 'TOKEN_FAILED'
  | 'LOGIN_REQUIRED'
  | 'LOGIN_FAILED'
  | 'UNAUTHORIZED'
  | 'RIGHTS_FAILURE'
  | 'ACCESS_FORBIDDEN'
  | 'REPORT_FAILED'
  | 'POLL_TIMEOUT'
  | 'PAGE_TIMEOUT'
  | 'RUN_TIMEOUT'
  | 'HTTP_TRANSIENT'
  | 'SERVER_UNREACHABLE'
  | 'HTTP_UNEXPECTED'
  | 'PAGE_BROKEN'
  | 'PAGE_FORMAT'
  | 'ROW_COUNT_MISMATCH'
  | 'PAGE_COUNT_MISMATCH'
  | 'DOCUMENT_NOT_FOUND'
  | 'VALUE_DOES_NOT_FIT'
  | 'VALUE_TOO_LARGE'
  | 'TARGET_INVALID'
  | 'GUARD_TRIPPED'
  | 'RANGE_VIOLATION'
  | 'SCHEMA_CHANGED'
  | 'PAGES_NOT_KEPT'
  | 'DATABASE'
  | 'ABORTED'
  | 'ORPHANED'
  | 'RUN_IN_PROGRESS'
  | 'OVERLAP_LOCK_LOST'
  | 'QUEUE_JOB_LOST'
  | 'RUN_STALLED'
  | 'INTERNAL';

/** Problem details of an `application/problem+json` answer (docs/report-export-service.md "Error problem body"). */
export interface ProblemDetails {
  status?: number;
  title?: string;
  type?: string;
  instance?: string;
  detail?: string;
  [key: string]: unknown;
}

/** Context an {@link EtlError} may carry. */
export interface EtlErrorOptions {
  cause?: unknown;
  /** Whether trying the same thing again may succeed. Defaults per code, see {@link RETRYABLE_CODES}. */
  retryable?: boolean;
  stage?: RunStage;
  /** HTTP status of the answer that caused the error, if any. */
  httpStatus?: number;
  /** The server's own text (job `message`, `SvcServletExceptionMessage` header), verbatim. */
  serverMessage?: string;
  /** Parsed problem+json body, verbatim. */
  problem?: ProblemDetails;
  /** Extra structured context (job name, page, column ...); must never hold secrets. */
  details?: Record<string, unknown>;
}

/**
 * The codes a retry can cure: network resets, 5xx, timeouts (a slow server may not be next time), an unreachable
 * server, a broken page. Everything else (bad config, rights, 403, a failed report, a value that does not fit) fails
 * the same way every time.
 */
export const RETRYABLE_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'HTTP_TRANSIENT',
  'SERVER_UNREACHABLE',
  'PAGE_BROKEN',
  'POLL_TIMEOUT',
  'PAGE_TIMEOUT',
  'RUN_TIMEOUT',
  'TOKEN_FAILED',
  'UNAUTHORIZED',
  'RUN_IN_PROGRESS',
  'OVERLAP_LOCK_LOST',
]);

/**
 * Postgres SQLSTATEs worth a retry: serialization failure, deadlock, admin shutdown, connection loss, and capacity
 * (53300 too many connections, 57P03 cannot connect now): a full server takes the attempt once others are done.
 */
export const RETRYABLE_SQLSTATES: ReadonlySet<string> = new Set([
  '40001',
  '40P01',
  '53300',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08001',
  '08003',
  '08006',
]);

/** Node socket errors of a lost or refused database (or any TCP) connection: worth a retry once it is back. */
export const CONNECTION_LOSS_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/** What node-postgres says when the server or the network went away mid-conversation (it sets no code then). */
const PG_CONNECTION_LOSS = new RegExp(
  [
    'Connection terminated',
    'connection error and is not queryable',
    'Client was closed and is not queryable',
    'timeout exceeded when trying to connect',
  ].join('|'),
  'i',
);

/**
 * Whether a database error says the connection was lost or could not be made (socket codes, SQLSTATE class 08,
 * 57P01-03, 53300, node-postgres' own messages), rather than something about the SQL or the data.
 */
export function isConnectionLoss(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  const code = typeof e.code === 'string' ? e.code : '';
  if (CONNECTION_LOSS_CODES.has(code) || /^(08|53300$|57P0[123]$)/.test(code)) return true;
  return typeof e.message === 'string' && PG_CONNECTION_LOSS.test(e.message);
}

/** Whether a database error is worth another attempt: {@link RETRYABLE_SQLSTATES} or {@link isConnectionLoss}. */
export function isRetryableDatabaseError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return (typeof code === 'string' && RETRYABLE_SQLSTATES.has(code)) || isConnectionLoss(err);
}

/** Base class of every deliberate report-etl error. */
export class EtlError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  stage: RunStage | undefined;
  readonly httpStatus: number | undefined;
  readonly serverMessage: string | undefined;
  readonly problem: ProblemDetails | undefined;
  readonly details: Record<string, unknown> | undefined;

  /** Every text is bounded here, the one place all of them pass (failure-text.ts; docs/architecture.md "Limits"). */
  constructor(code: ErrorCode, message: string, options: EtlErrorOptions = {}) {
    super(boundText(message, MAX_MESSAGE_CHARS), options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? RETRYABLE_CODES.has(code);
    this.stage = options.stage;
    this.httpStatus = options.httpStatus;
    this.serverMessage = options.serverMessage === undefined ? undefined : boundText(options.serverMessage);
    this.problem = options.problem === undefined ? undefined : boundJson(options.problem);
    this.details = options.details === undefined ? undefined : boundJson(options.details);
  }
}

/** jobs.yaml or the environment is wrong; `problems` lists every one, each naming file, job and key. */
export class ConfigError extends EtlError {
  readonly problems: string[];
  constructor(problems: string[], options: EtlErrorOptions = {}) {
    const message =
      problems.length === 1
        ? problems[0]!
        : `${problems.length} problems:\n${problems.map((p) => `  - ${p}`).join('\n')}`;
    super('CONFIG_INVALID', message, { stage: 'config', ...options, retryable: false });
    this.problems = problems;
  }
}

/** Turns anything thrown into an Error (graphile-worker `coerceError`). */
export function coerceError(err: unknown): Error {
  if (err instanceof Error) return err;
  if (typeof err === 'string') return new Error(err);
  try {
    return new Error(`Non-error thrown: ${JSON.stringify(err)}`);
  } catch {
    return new Error(`Non-error thrown: ${String(err)}`);
  }
}

/** The error an aborted run throws (Ctrl-C, shutdown, a caller's AbortSignal). */
export class AbortedError extends EtlError {
  constructor(reason?: unknown) {
    const why = reason instanceof Error ? `: ${reason.message}` : typeof reason === 'string' ? `: ${reason}` : '';
    super('ABORTED', `run aborted${why}`, { retryable: true });
  }
}

/** Throws {@link AbortedError} when `signal` is aborted. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortedError(signal.reason);
}
