/**
 * How far a loading attempt got (etl.attempts.progress, migration 0023; docs/observability.md "Run history"): written
 * outside the load transaction as the server renders the report (its polls, at page 0) and as pages are read, so that
 * an attempt whose process died still says where it stopped, and when it was last heard of.
 * Cheap by construction: at most one UPDATE in flight and about one a second, the newest figures replacing any not yet
 * written (a queue of one), never awaited by the load, failures logged at debug.
 */
import type pg from 'pg';
import type { Logger } from '../logger.ts';

/** etl.attempts.progress: where the reading stood at `at`. */
export interface AttemptProgress {
  /** 1-based page being read (or the last one read, once reading ended); 0 while the server renders the report. */
  page: number;
  /** Pages read whole. */
  pagesRead: number;
  /** Pages the server announced (`pages=`); null when unknown. */
  pages: number | null;
  /** Rows read so far (decoded, not committed). */
  rows: number;
  /** At page 0: the polls the server answered so far, its report still rendering. */
  polls?: number;
  /** When, ISO 8601 UTC. */
  at: string;
}

/** Writes an attempt's progress; see the file's comment. */
export interface ProgressRecorder {
  /** Notes the newest figures; written now, or within about `minIntervalMs`, or replaced by newer ones. */
  note(p: Omit<AttemptProgress, 'at'>): void;
  /** Writes what was noted and not yet written, and waits for it (never throws). Idempotent. */
  close(): Promise<void>;
}

/**
 * A recorder for attempt `attemptId` on `pool`, which lends each UPDATE a connection (never the load transaction's).
 * @param minIntervalMs the least time between two UPDATEs (default 1000)
 */
export function progressRecorder(
  pool: pg.Pool,
  attemptId: string,
  log: Logger,
  minIntervalMs = 1000,
): ProgressRecorder {
  let pending: AttemptProgress | undefined;
  let inFlight: Promise<void> | undefined;
  let lastWrite = -Infinity;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const write = (): void => {
    timer = undefined;
    if (!pending || inFlight) return;
    const p = pending;
    pending = undefined;
    lastWrite = performance.now();
    inFlight = pool
      .query('UPDATE etl.attempts SET progress = $2::jsonb WHERE attempt_id = $1', [attemptId, JSON.stringify(p)])
      .then(
        () => undefined,
        (err: unknown) => log.debug({ err: err instanceof Error ? err.message : String(err) }, 'progress not recorded'),
      )
      .finally(() => {
        inFlight = undefined;
        if (pending && !closed) schedule();
      });
  };
  const schedule = (): void => {
    if (timer || inFlight) return;
    const wait = lastWrite + minIntervalMs - performance.now();
    if (wait <= 0) write();
    else {
      timer = setTimeout(write, wait);
      timer.unref();
    }
  };
  return {
    note(p) {
      if (closed) return;
      pending = { ...p, at: new Date().toISOString() };
      schedule();
    },
    async close() {
      if (timer) clearTimeout(timer);
      timer = undefined;
      closed = true;
      await inFlight;
      if (pending) write();
      await inFlight;
    },
  };
}

/** etl.attempts.progress read back, or undefined when missing or not of this shape. */
export function readProgress(value: unknown): AttemptProgress | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v.page !== 'number' || typeof v.rows !== 'number' || typeof v.at !== 'string') return undefined;
  return {
    page: v.page,
    pagesRead: typeof v.pagesRead === 'number' ? v.pagesRead : v.page - 1,
    pages: typeof v.pages === 'number' ? v.pages : null,
    rows: v.rows,
    ...(typeof v.polls === 'number' ? { polls: v.polls } : {}),
    at: v.at,
  };
}

/**
 * Where an attempt that did not finish stopped, in words: `stopped at page 33 of 40, 3,200,000 rows read` (`of ?`
 * when the pages were not announced; `after page 40 of 40` once every page was read, also while the request past
 * the last page waits for the server's 404); at page 0 `stopped while the server rendered the report (12 polls),
 * before its first page`. Counts grouped by `count`.
 */
export function stoppedAtWords(p: AttemptProgress, count: (n: number) => string): string {
  if (p.page === 0) return `stopped while the server rendered the report (${polled(p, count)}), before its first page`;
  const of = `of ${p.pages === null ? '?' : count(p.pages)}`;
  const page = p.pages === null ? p.page : Math.min(p.page, p.pages);
  const where = p.pagesRead >= page ? `after page ${count(page)} ${of}` : `at page ${count(page)} ${of}`;
  return `stopped ${where}, ${count(p.rows)} rows read`;
}

/**
 * How far a running attempt is, in words: `reading page 33 of 40, 3,200,000 rows read so far`, or at page 0 `the
 * server renders the report (12 polls so far)`. Counts grouped by `count`.
 */
export function readingWords(p: AttemptProgress, count: (n: number) => string): string {
  if (p.page === 0) return `the server renders the report (${polled(p, count)} so far)`;
  const of = p.pages === null ? '?' : count(p.pages);
  return `reading page ${count(p.page)} of ${of}, ${count(p.rows)} rows read so far`;
}

/** `1 poll`, `12 polls`. */
function polled(p: AttemptProgress, count: (n: number) => string): string {
  const n = p.polls ?? 0;
  return `${count(n)} poll${n === 1 ? '' : 's'}`;
}

/**
 * A count with thousands separated by commas: `3,200,000` (as `toLocaleString('en-US')` groups an integer); a
 * bigint column read as a string is grouped alike. The one format of counts in logs, CLI output and admin pages.
 */
export function commaCount(n: number | string): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}
