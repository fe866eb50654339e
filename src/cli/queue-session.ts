/**
 * Shared by the short queue commands (`enqueue`, `runs`, `replay`, `backfill`): opens PostgreSQL (migrated),
 * Redis and the queue for one action and closes them after, whatever happens.
 */
import type pg from 'pg';
import { openStores } from '../app/bootstrap.ts';
import { makeLogger, type Logger } from '../logger.ts';
import { makeQueue, type RunQueue } from '../queue/queue.ts';

/** What a queue command's action gets. */
export interface QueueSession {
  pool: pg.Pool;
  queue: RunQueue;
  logger: Logger;
}

/** Runs `fn` with a migrated pool and the queue of `prefix`; closes both after. */
export async function withQueueSession<T>(prefix: string, fn: (s: QueueSession) => Promise<T>): Promise<T> {
  const logger = makeLogger();
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
    logger.flush();
  }
}
