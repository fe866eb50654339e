/**
 * The start-up wiring every command shares (DESIGN.md "Layout": app/): one PostgreSQL pool and one Redis
 * connection for the process, the run history migrated, and a last-in-first-out release stack
 * (CONVENTIONS.md "Lifecycle") that closes them in the right order whatever happens.
 */
import type pg from 'pg';
import type { Redis } from 'ioredis';
import { migrate } from '../history/migrate.ts';
import type { Logger } from '../logger.ts';
import { makePool, makeRedis, Releasers } from './connections.ts';

/** What {@link openStores} opens. */
export interface Stores {
  pool: pg.Pool;
  redis: Redis;
  /** Release steps; the pool and Redis are on it already. Add more as you open them; call `releaseAll()` once. */
  releasers: Releasers;
}

/** Options of {@link openStores}. */
export interface StoresOptions {
  /** Most connections of the pool (default 10). */
  poolMax?: number;
  /** Apply the migrations (default true): every command that writes the run history does. */
  migrate?: boolean;
}

/**
 * Opens the pool (DATABASE_URL) and Redis (REDIS_URL) and migrates the run history.
 * @returns the stores; on error everything opened so far is released before the error is thrown
 * @throws connection and migration errors
 */
export async function openStores(logger: Logger, o: StoresOptions = {}): Promise<Stores> {
  const releasers = new Releasers();
  try {
    const pool = makePool(logger, undefined, o.poolMax ?? 10);
    releasers.add(() => pool.end());
    if (o.migrate ?? true) await migrate(pool, logger);
    const redis = makeRedis(logger);
    releasers.add(() => redis.quit());
    return { pool, redis, releasers };
  } catch (err) {
    await releasers.releaseAll().catch(() => undefined);
    throw err;
  }
}
