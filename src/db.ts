/**
 * What every module that talks to PostgreSQL shares: something that runs SQL, and one transaction helper
 * (docs/architecture.md "Lifecycle": a failed transaction is always rolled back before its error travels on).
 */
import pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { retry } from './backoff.ts';
import { coerceError, isConnectionLoss } from './errors.ts';
import type { Logger } from './logger.ts';

/** Something that runs SQL: a pool or a checked-out client. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

/**
 * Runs `fn` inside BEGIN … COMMIT on a client of `pool`, released afterwards. A throw rolls back and is rethrown.
 * @returns what `fn` returned
 * @throws whatever BEGIN, `fn` or COMMIT threw (after ROLLBACK)
 */
export async function withTransaction<T>(pool: pg.Pool, fn: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('BEGIN');
    const value = await fn(client);
    await client.query('COMMIT');
    return value;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    broken = isConnectionLoss(err);
    throw err;
  } finally {
    releaseClient(client, broken);
  }
}

/** A statement {@link cancelOnAbort} cancelled, and what PostgreSQL said it waited for then (pg_stat_activity). */
export interface CancelledStatement {
  /** `wait_event_type`: `Lock` for a lock another session holds, `IO`, `LWLock` …, or null: working. */
  waitEventType: string | null;
  /** `wait_event`: `relation`, `transactionid`, `DataFileRead` …, or null. */
  waitEvent: string | null;
  /** PostgreSQL had no connection to spare to be asked: cancelled by the protocol's cancel request, wait unknown. */
  unseen?: true;
}

/** What {@link cancelOnAbort} gives: its end, to await before the client rolls back and goes back to its pool. */
export interface StatementCanceller {
  /**
   * Stops cancelling (idempotent); waits for a cancel under way and closes the connection it used.
   * @returns the first statement it cancelled (then destroy the client), or undefined
   */
  end(): Promise<CancelledStatement | undefined>;
}

/** How often statements are looked at once the signal aborted, ms. */
const CANCEL_CHECK_MS = 200;

/**
 * Cancels the statements `client` runs once `signal` aborted (docs/architecture.md "Limits"): an abort (maxRunMs, a
 * shutdown) ends whatever the attempt awaits from the network, but not a statement PostgreSQL holds, such as a DELETE
 * waiting for a lock a long dashboard query or a migration keeps. From the abort until {@link StatementCanceller.end},
 * every 200 ms, a statement that is running and not waiting for this process (a COPY waiting for rows ends by the
 * abort itself) is cancelled with `pg_cancel_backend`, asked on a connection of its own (a full pool must not hold it
 * up): also one sent after the abort. When PostgreSQL has no connection to spare, the protocol's cancel request
 * (which needs none) cancels whatever statement runs. It then fails with 57014 (query_canceled), and the caller's error path ends the
 * canceller before its ROLLBACK. A client that had a statement cancelled must be destroyed rather than reused.
 * @param pool the pool `client` came from (its connection settings are used for the cancel)
 */
export function cancelOnAbort(
  pool: pg.Pool,
  client: pg.PoolClient,
  signal: AbortSignal | undefined,
): StatementCanceller {
  if (!signal) return { end: async () => undefined };
  const pid = (client as pg.PoolClient & { processID?: number }).processID;
  const stop = new AbortController();
  let first: CancelledStatement | undefined;
  let watching: Promise<void> | undefined;
  let ended: Promise<CancelledStatement | undefined> | undefined;
  // PostgreSQL without a connection to spare (max_connections reached, as when every load of a shutting-down fleet
  // aborts at once): the protocol's cancel request, which needs none, for whatever statement runs then.
  const cancelByRequest = (): void => {
    const active = (client as pg.PoolClient & { activeQuery?: unknown }).activeQuery;
    if (!active) return;
    const request = new pg.Client(pool.options) as pg.Client & {
      cancel(c: pg.PoolClient, q: unknown): void;
      connection: { on(e: string, f: () => void): void };
    };
    request.connection.on('error', () => undefined);
    request.cancel(client, active);
    first ??= { waitEventType: null, waitEvent: null, unseen: true };
  };
  const watch = async (): Promise<void> => {
    let canceller: pg.Client | undefined;
    try {
      while (!stop.signal.aborted) {
        if (!canceller) {
          const c = new pg.Client({ ...pool.options, connectionTimeoutMillis: 2_000 });
          c.on('error', () => undefined);
          canceller = await c.connect().then(
            () => c,
            async () => {
              await c.end().catch(() => undefined);
              return undefined;
            },
          );
        }
        if (stop.signal.aborted) break;
        if (!canceller) cancelByRequest();
        else {
          const { rows } = await canceller.query<{
            wait_event_type: string | null;
            wait_event: string | null;
            cancelled: boolean;
          }>(
            `SELECT wait_event_type, wait_event, pg_cancel_backend(pid) AS cancelled FROM pg_stat_activity
              WHERE pid = $1 AND state = 'active' AND wait_event_type IS DISTINCT FROM 'Client'`,
            [pid],
          );
          const row = rows[0];
          if (row?.cancelled) first ??= { waitEventType: row.wait_event_type, waitEvent: row.wait_event };
        }
        await sleep(CANCEL_CHECK_MS, undefined, { signal: stop.signal }).catch(() => undefined);
      }
    } catch {
      // The canceller's connection broke: the abort still ends the attempt once the statement ends by itself.
    } finally {
      await canceller?.end().catch(() => undefined);
    }
  };
  const onAbort = (): void => {
    if (pid !== undefined && !stop.signal.aborted) watching ??= watch();
  };
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  return {
    end() {
      ended ??= (async () => {
        signal.removeEventListener('abort', onAbort);
        stop.abort();
        await watching;
        return first;
      })();
      return ended;
    },
  };
}

/**
 * A statement of a transaction that {@link cancelOnAbort} cancelled when the caller's signal aborted; `cause` is
 * PostgreSQL's error (57014).
 */
export class StatementCancelledError extends Error {
  readonly cancelled: CancelledStatement;
  constructor(cancelled: CancelledStatement, cause: unknown) {
    super(`PostgreSQL's statement was cancelled (it was ${describeWait(cancelled)})`, { cause });
    this.name = 'StatementCancelledError';
    this.cancelled = cancelled;
  }
}

/** `waiting for a lock (relation)`, `waiting (IO: DataFileRead)`, `working` or, unseen, `running`. */
export function describeWait(c: CancelledStatement): string {
  if (c.unseen) return 'running (PostgreSQL had no connection to spare to say what it waited for)';
  if (c.waitEventType === 'Lock') return `waiting for a lock another session held (${c.waitEvent ?? 'lock'})`;
  if (c.waitEventType) return `waiting (${c.waitEventType}${c.waitEvent ? `: ${c.waitEvent}` : ''})`;
  return 'working';
}

/**
 * Gives a client back to its pool; one whose connection was lost is destroyed instead, so that the pool does not
 * hand it to the next caller.
 */
export function releaseClient(client: pg.PoolClient, broken: boolean): void {
  client.release(broken ? new Error('connection lost') : undefined);
}

/** What {@link untilDatabaseTakesIt} logs: what waits (`recording the failed attempt`) and what happened once it could. */
export interface DatabaseWait {
  todo: string;
  done: string;
}

/**
 * Runs `fn` until PostgreSQL takes it: on a lost connection, a full server (53300), one starting up (57P03) or a pool
 * timeout (errors.ts isConnectionLoss) it tries again after a growing delay (backoff.ts, up to 10 s), logging
 * once that it waits ("PostgreSQL cannot be reached or has no room: <todo> once it can") and once that it is back.
 * Used where a record must not be dropped: an attempt's start and end (docs/architecture.md "A fleet").
 * @throws what `fn` throws when it is not such an error; AbortedError when `signal` aborts while it waits
 */
export async function untilDatabaseTakesIt<T>(
  log: Logger,
  what: DatabaseWait,
  signal: AbortSignal | undefined,
  fn: () => Promise<T>,
): Promise<T> {
  const started = Date.now();
  let waiting = false;
  const result = await retry(fn, {
    policy: DATABASE_WAIT,
    retryable: isConnectionLoss,
    signal,
    onRetry: (e) => {
      if (!waiting)
        log.warn(
          { err: coerceError(e).message },
          `PostgreSQL cannot be reached or has no room: ${what.todo} once it can`,
        );
      waiting = true;
    },
  });
  if (waiting) log.info({ waitedMs: Date.now() - started }, `PostgreSQL is back: ${what.done}`);
  return result;
}

/** The waits of {@link untilDatabaseTakesIt}: without end, 250 ms doubling to at most 10 s (with full jitter). */
const DATABASE_WAIT = { attempts: Infinity, baseDelayMs: 250, maxDelayMs: 10_000 };
