/**
 * What every module that talks to PostgreSQL shares: something that runs SQL, and one transaction helper
 * (docs/architecture.md "Lifecycle": a failed transaction is always rolled back before its error travels on).
 */
import type pg from 'pg';
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

/** Gives a client back to its pool, or destroys it when its connection was lost. */
export function releaseClient(client: pg.PoolClient, broken: boolean): void {
  client.release(broken ? new Error('connection lost') : undefined);
}

/** What {@link untilDatabaseTakesIt} logs: what waits (`recording the failed attempt`), what was done once it could. */
export interface DatabaseWait {
  todo: string;
  done: string;
}

/**
 * Runs `fn` until PostgreSQL takes it: on a lost connection or a full or starting server (errors.ts isConnectionLoss)
 * it tries again after a growing delay, up to 10 s, logging once that it waits and once that it is back. For records
 * that must not be dropped: an attempt's start and end (docs/architecture.md "A fleet").
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
