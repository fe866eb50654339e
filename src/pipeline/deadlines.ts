/**
 * The deadlines of an attempt (docs/architecture.md "Limits"): one for each output page (`pageTimeoutMs`, from its
 * request to its last byte) and one for the whole attempt (`maxRunMs`, from its start to its commit), the job's own
 * or else its connection's. A deadline aborts an AbortSignal joined with the attempt's own, so that whatever the
 * attempt awaits (HTTP requests, page bodies, polling sleeps, the COPY stream fed by the pages) ends the way an abort
 * already ends it: the load rolls back and the report job is deleted. The failure is then recorded under the
 * deadline's own code, PAGE_TIMEOUT or RUN_TIMEOUT, retryable: a server that was stuck or slow may not be next time.
 */
import { DEFAULT_MAX_RUN_MS, DEFAULT_PAGE_TIMEOUT_MS } from '../config/schema.ts';
import type { ResolvedJob } from '../config/load.ts';
import { describeWait, type CancelledStatement } from '../warehouse/load-transaction.ts';
import { EtlError } from '../errors.ts';
import type { RunStage } from '../vocabulary.ts';

/** The deadlines of one attempt, in ms. */
export interface AttemptDeadlines {
  /** Longest time of one output page, from its request (or the end of the page before it) to its last byte. */
  readonly pageTimeoutMs: number;
  /** Longest time of the attempt, from its start to its commit. */
  readonly maxRunMs: number;
}

/** A job's deadlines: its own `pageTimeoutMs` and `maxRunMs`, else its connection's. */
export function deadlinesOf(job: ResolvedJob): AttemptDeadlines {
  return {
    pageTimeoutMs: job.job.pageTimeoutMs ?? job.connection.pageTimeoutMs ?? DEFAULT_PAGE_TIMEOUT_MS,
    maxRunMs: job.job.maxRunMs ?? job.connection.maxRunMs ?? DEFAULT_MAX_RUN_MS,
  };
}

/** How to fix a deadline that was too short, or the server behind it; ends every deadline's message. */
function fixHint(option: 'pageTimeoutMs' | 'maxRunMs', slow: string): string {
  return (
    `Check the server (${slow}), or raise ${option} in jobs.yaml (the job's, ` +
    `or its connection's) if it is this slow by nature`
  );
}

/**
 * One output page took longer than `pageTimeoutMs`, from its request to its last byte: the server sends it too
 * slowly or stopped sending it (a pause between bytes shorter than requestTimeoutMs does not end a request by itself).
 * Stage `fetch`, retryable; `details`: reportJobId, page, limitMs, bytes and rows of the page received.
 */
export class PageTimeoutError extends EtlError {
  /**
   * @param received whether the server had answered the request (status and headers), the page's body bytes that had
   *   arrived and the rows decoded from them
   */
  constructor(
    reportJobId: string,
    page: number,
    limitMs: number,
    received: { answered: boolean; bytes: number; rows: number },
  ) {
    const got = !received.answered
      ? 'the server had not answered its request'
      : `${received.bytes} bytes of it had arrived${received.rows > 0 ? ` (${received.rows} rows)` : ''}`;
    super(
      'PAGE_TIMEOUT',
      `page ${page} of report job ${reportJobId} was not read within pageTimeoutMs (${limitMs} ms): ` +
        `${got}; nothing was committed. ` +
        fixHint('pageTimeoutMs', 'it sends the page too slowly or stopped sending it'),
      { stage: 'fetch', details: { reportJobId, page, limitMs, ...received } },
    );
  }
}

/**
 * The attempt did not commit within `maxRunMs` of its start: the report took too long to render, or its pages to
 * arrive. Retryable; `details`: limitMs, the stage it was at, pages and bytes read.
 */
export class RunTimeoutError extends EtlError {
  /**
   * @param at where the attempt was: its stage, the pages read completely and their bytes, and the load's statement
   *   PostgreSQL was still running, cancelled (`details.cancelledStatement`: what it waited for)
   */
  constructor(
    limitMs: number,
    at: { stage: RunStage; pages: number; bytes: number; cancelled?: CancelledStatement | undefined },
  ) {
    const got =
      at.pages === 0 && at.bytes === 0
        ? 'no page had been read'
        : `${at.pages === 0 ? 'no page' : `${at.pages} page${at.pages === 1 ? '' : 's'}`} had been read ` +
          `completely (${at.bytes} bytes had arrived)`;
    const c = at.cancelled;
    const database = c
      ? `; PostgreSQL was still running a statement of the load, ${describeWait(c)}, and ` +
        `${c.by === 'cancel' ? 'it was cancelled' : `its ${c.by} ended it`}; nothing was committed. ` +
        (c.waitEventType === 'Lock'
          ? 'Check what holds locks on the target (pg_locks joined with pg_stat_activity)'
          : 'Check PostgreSQL (its load, what else runs there)') +
        ", or raise maxRunMs in jobs.yaml (the job's, or its connection's) if loads this long are expected"
      : `; nothing was committed. ${fixHint('maxRunMs', 'a report slow to render, or pages slow to arrive')}`;
    super(
      'RUN_TIMEOUT',
      `the attempt did not commit within maxRunMs (${limitMs} ms) of its start: ` +
        `it was at stage ${at.stage}, ${got}${database}`,
      {
        stage: at.stage,
        details: { limitMs, pages: at.pages, bytes: at.bytes, ...(c ? { cancelledStatement: { ...c } } : {}) },
      },
    );
  }
}

/** The reason a page's signal carries when its deadline passed. */
export class PageDeadlineReached extends Error {
  readonly limitMs: number;
  constructor(limitMs: number) {
    super(`pageTimeoutMs (${limitMs} ms) reached`);
    this.name = 'PageDeadlineReached';
    this.limitMs = limitMs;
  }
}

/**
 * Starts a page's `pageTimeoutMs` deadline now: `stop` aborts with a {@link PageDeadlineReached} once it passes.
 * @param limitMs undefined or Infinity: no deadline
 * @returns the timer, for clearTimeout once the page ended
 */
export function startPageDeadline(limitMs: number | undefined, stop: AbortController): NodeJS.Timeout | undefined {
  if (limitMs === undefined || !Number.isFinite(limitMs)) return undefined;
  return setTimeout(() => stop.abort(new PageDeadlineReached(limitMs)), limitMs);
}

/** The reason an attempt's signal carries when `maxRunMs` passed. */
export class RunDeadlineReached extends Error {
  readonly limitMs: number;
  constructor(limitMs: number) {
    super(`maxRunMs (${limitMs} ms) reached`);
    this.name = 'RunDeadlineReached';
    this.limitMs = limitMs;
  }
}

/** The whole-attempt deadline, running. */
export interface RunDeadline {
  /**
   * Aborts when one of the `outer` signals does (with its reason) or when the deadline passes (with a
   * {@link RunDeadlineReached}).
   */
  readonly signal: AbortSignal;
  /** `performance.now()` when it passes (the load transaction's timeouts). */
  readonly endsAt: number;
  /** Stops the timer; call it once the attempt ended, in every outcome. */
  clear(): void;
}

/**
 * Starts the attempt's `maxRunMs` deadline now.
 * @param outer the signals joined with the deadline's: the caller's (shutdown, a cancelled queue job), the overlap
 *   lock's `lost`; undefined ones are left out
 */
export function startRunDeadline(limitMs: number, ...outer: (AbortSignal | undefined)[]): RunDeadline {
  const own = new AbortController();
  const timer = setTimeout(() => own.abort(new RunDeadlineReached(limitMs)), limitMs);
  const given = outer.filter((s): s is AbortSignal => s !== undefined);
  return {
    signal: given.length ? AbortSignal.any([...given, own.signal]) : own.signal,
    endsAt: performance.now() + limitMs,
    clear: () => clearTimeout(timer),
  };
}
