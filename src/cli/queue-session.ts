/**
 * The stores of the short commands, closed after the action whatever happens; a store that does not answer fails
 * within seconds with a StoreUnavailableError.
 */
import type pg from 'pg';
import type { Logger } from '../logger.ts';
import type { RunQueue } from '../queue/queue.ts';

/** What a queue command's action gets. */
export interface QueueSession {
  pool: pg.Pool;
  queue: RunQueue;
  logger: Logger;
}

/** Runs `fn` with a migrated pool and the queue of `prefix` (`enqueue`, `replay`, `backfill`). */
export async function withQueueSession<T>(prefix: string, fn: (s: QueueSession) => Promise<T>): Promise<T> {
  // Loaded on use: registering the commands loads neither the drivers nor BullMQ (start-up cost).
  const [{ openStores }, { makeLogger }, { makeQueue }, { startTracing, SHORT_COMMAND_EXPORT_MS }] = await Promise.all([
    import('../app/bootstrap.ts'),
    import('../logger.ts'),
    import('../queue/queue.ts'),
    import('../app/tracing-sdk.ts'),
  ]);
  const logger = makeLogger();
  // A queued run's trace begins with its enqueue span, exported before the command ends (docs/observability.md
  // "Tracing").
  const tracing = await startTracing(logger, process.env, { maxExportMs: SHORT_COMMAND_EXPORT_MS });
  try {
    const { pool, redis, releasers } = await openStores(logger, { poolMax: 2 });
    try {
      const queue = makeQueue(redis, prefix);
      releasers.add(() => queue.close());
      return await fn({ pool, queue, logger });
    } finally {
      await releasers.releaseAll().catch(() => undefined);
    }
  } finally {
    await tracing?.shutdown();
    logger.flush();
  }
}

/** Runs `fn` with a pool for reading the run history (`runs`): no Redis, no migrations (it may be the wrong one). */
export async function withHistory<T>(fn: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const [{ openHistoryPool }, { makeLogger }] = await Promise.all([
    import('../app/bootstrap.ts'),
    import('../logger.ts'),
  ]);
  const logger = makeLogger();
  try {
    const pool = await openHistoryPool(logger, { poolMax: 2 });
    try {
      return await fn(pool);
    } finally {
      await pool.end().catch(() => undefined);
    }
  } finally {
    logger.flush();
  }
}
