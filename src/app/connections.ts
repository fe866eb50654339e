/**
 * The process's PostgreSQL pool and Redis connection, from DATABASE_URL and REDIS_URL, with error listeners so that
 * an idle connection's error is logged instead of killing the process (docs/architecture.md "Lifecycle").
 */
import pg from 'pg';
import { Cluster, Redis } from 'ioredis';
import { isRedisClusterUrl, parseRedisClusterUrl, type RedisClusterUrl } from '../redis-url.ts';
import { ConfigError } from '../errors.ts';
import type { Logger } from '../logger.ts';

/** Default PostgreSQL URL when DATABASE_URL is not set. */
export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
/** Default Redis URL when REDIS_URL is not set. */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** A pg pool for DATABASE_URL; idle-client errors are logged. */
export function makePool(logger: Logger, url = process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL, max = 10): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, application_name: 'report-etl' });
  pool.on('error', (err) => logger.error({ err: err.message }, 'idle PostgreSQL client error'));
  pool.on('connect', (client) =>
    client.on('error', (err) => logger.error({ err: err.message }, 'PostgreSQL client error')),
  );
  return pool;
}

/**
 * `DATABASE_POOL_MAX` (default 10): the PostgreSQL connections one process holds for its runs, whatever its
 * `--concurrency` (docs/architecture.md "A fleet").
 * @throws ConfigError when the variable is not a whole number of at least 1
 */
export function databasePoolMax(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.DATABASE_POOL_MAX;
  if (raw === undefined || raw.trim() === '') return 10;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) {
    throw new ConfigError([
      `DATABASE_POOL_MAX must be a whole number of at least 1 (got "${raw}"): ` +
        'the most PostgreSQL connections one process holds for its runs, default 10',
    ]);
  }
  return n;
}

/**
 * An ioredis connection for REDIS_URL, one server or a Redis Cluster (typed as `Redis`: report-etl's commands behave
 * alike on both), with `maxRetriesPerRequest: null` as BullMQ requires; errors are logged.
 */
export function makeRedis(logger: Logger, url = process.env.REDIS_URL ?? DEFAULT_REDIS_URL): Redis {
  const redis = isRedisClusterUrl(url)
    ? makeCluster(parseRedisClusterUrl(url))
    : new Redis(url, { maxRetriesPerRequest: null, lazyConnect: false });
  redis.on('error', (err: Error) => logger.error({ err: err.message }, 'Redis connection error'));
  return redis;
}

/** A Cluster client of `c`, typed as a single connection (see {@link makeRedis}). */
export function makeCluster(c: RedisClusterUrl, options: { lazyConnect?: boolean; retry?: boolean } = {}): Redis {
  const cluster = new Cluster(c.nodes, {
    lazyConnect: options.lazyConnect ?? false,
    ...(options.retry === false ? { clusterRetryStrategy: () => null } : {}),
    redisOptions: {
      maxRetriesPerRequest: null,
      username: c.username,
      password: c.password,
      ...(c.tls ? { tls: {} } : {}),
    },
  });
  return cluster as unknown as Redis;
}

/** A last-in-first-out stack of things to release (docs/architecture.md "Lifecycle"). */
export class Releasers {
  private readonly stack: Array<() => Promise<unknown> | unknown> = [];
  /** Adds a release step; it runs before every step added earlier. */
  add(release: () => Promise<unknown> | unknown): void {
    this.stack.push(release);
  }
  /** Runs every step, last added first; errors are collected, then thrown as one AggregateError. */
  async releaseAll(): Promise<void> {
    const errors: unknown[] = [];
    while (this.stack.length) {
      try {
        await this.stack.pop()!();
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length) throw new AggregateError(errors, 'errors while releasing resources');
  }
}
