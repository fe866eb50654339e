/**
 * The stores of the short commands, closed after the action whatever happens, with the logger flushed; a store that
 * does not answer fails within seconds with a StoreUnavailableError.
 */
import type pg from 'pg';
import type { Stores } from '../app/bootstrap.ts';
import type { LogFormat } from '../log-format.ts';
import type { Logger } from '../logger.ts';
import type { RunQueue } from '../queue/queue.ts';

/** What a queue command's action gets. */
export interface QueueSession {
  pool: pg.Pool;
  queue: RunQueue;
  logger: Logger;
}

/** How {@link withStores} opens them. */
interface StoresOptions {
  /** `--log-format` (default: the environment's). */
  logFormat?: LogFormat | undefined;
  /** Export traces, and wait for the export before the command ends (docs/observability.md "Tracing"). */
  tracing?: boolean;
}

/** Runs `fn` with a logger, a migrated pool of two connections and Redis (app/bootstrap.ts openStores). */
export async function withStores<T>(
  fn: (s: Stores & { logger: Logger }) => Promise<T>,
  o: StoresOptions = {},
): Promise<T> {
  // Loaded on use: registering the commands loads neither the drivers nor BullMQ (start-up cost).
  const [{ openStores }, { makeLogger }, { startTracing }] = await Promise.all([
    import('../app/bootstrap.ts'),
    import('../logger.ts'),
    import('../app/tracing-sdk.ts'),
  ]);
  const logger = makeLogger({}, o.logFormat);
  const tracing = o.tracing ? await startTracing(logger) : null;
  try {
    const stores = await openStores(logger, { poolMax: 2 });
    try {
      return await fn({ ...stores, logger });
    } finally {
      await stores.releasers.releaseAll().catch(() => undefined);
    }
  } finally {
    await tracing?.shutdown();
    logger.flush();
  }
}

/**
 * Runs `fn` with the stores and the queue of `prefix` (`enqueue`, `replay`, `backfill`); a queued run's trace begins
 * with its enqueue span, exported before the command ends.
 */
export async function withQueueSession<T>(prefix: string, fn: (s: QueueSession) => Promise<T>): Promise<T> {
  const { makeQueue } = await import('../queue/queue.ts');
  return withStores(
    ({ pool, redis, releasers, logger }) => {
      const queue = makeQueue(redis, prefix);
      releasers.add(() => queue.close());
      return fn({ pool, queue, logger });
    },
    { tracing: true },
  );
}

/**
 * Runs `fn` with a pool of two connections and a logger, no Redis and no migrations (`runs` may read the wrong
 * database; `revert` and `migrate` migrate themselves).
 */
export async function withPool<T>(fn: (pool: pg.Pool, logger: Logger) => Promise<T>): Promise<T> {
  const [{ openHistoryPool }, { makeLogger }] = await Promise.all([
    import('../app/bootstrap.ts'),
    import('../logger.ts'),
  ]);
  const logger = makeLogger();
  try {
    const pool = await openHistoryPool(logger, { poolMax: 2 });
    try {
      return await fn(pool, logger);
    } finally {
      await pool.end().catch(() => undefined);
    }
  } finally {
    logger.flush();
  }
}
