/**
 * The start-up wiring every command shares (docs/architecture.md "Lifecycle"): one PostgreSQL pool and one Redis
 * connection, the run history migrated, a release stack. Each store is checked first with one bounded connection, so
 * that one that is down or refuses us fails the command within seconds as a {@link StoreUnavailableError}.
 */
import pg from 'pg';
import { Redis } from 'ioredis';
import { migrate } from '../history/migrate.ts';
import type { Logger } from '../logger.ts';
import { DEFAULT_DATABASE_URL, DEFAULT_REDIS_URL, makeCluster, makePool, makeRedis, Releasers } from './connections.ts';
import { isRedisClusterUrl, parseRedisClusterUrl } from '../redis-url.ts';
import { StoreUnavailableError } from './store-unavailable.ts';

/** How long the first connection to PostgreSQL or Redis may take before a command gives up, in ms. */
const STORE_CONNECT_TIMEOUT_MS = 5_000;

export { StoreUnavailableError } from './store-unavailable.ts';

/** `host:port`, and with `path` `/database`, of a URL (never user or password); `bad` when it is no URL. */
function hostPort(url: string, port: string, bad: string, path = false): string {
  try {
    const u = new URL(url);
    return `${u.hostname || 'localhost'}:${u.port || port}${path && u.pathname.length > 1 ? u.pathname : ''}`;
  } catch {
    return bad;
  }
}

/** `host:port/database` of a PostgreSQL URL (never user or password). */
export function describeDatabaseUrl(url: string): string {
  return hostPort(url, '5432', 'a connection string that is no URL', true);
}

/** `host:port` of a Redis URL, or a cluster's nodes (never user or password). */
function describeRedisUrl(url: string): string {
  if (!isRedisClusterUrl(url)) return hostPort(url, '6379', 'a URL that does not parse');
  try {
    return `the Redis Cluster at ${parseRedisClusterUrl(url)
      .nodes.map((n) => `${n.host}:${n.port}`)
      .join(', ')}`;
  } catch {
    return 'a Redis Cluster URL that does not parse';
  }
}

/** The code of a connection error: Node's `code` (also inside an AggregateError of several addresses), else a word. */
function errorCode(err: unknown, fallback: string): string {
  const e = err as { code?: unknown; errors?: unknown[] } | undefined;
  if (typeof e?.code === 'string' && e.code) return e.code;
  const inner = e?.errors?.find((x) => typeof (x as { code?: unknown })?.code === 'string') as
    { code: string } | undefined;
  if (inner) return inner.code;
  const word = /^([A-Z]{4,})\b/.exec(err instanceof Error ? err.message : '');
  if (word) return word[1]!;
  return err instanceof Error && err.name !== 'Error' ? err.name : fallback;
}

function firstLine(err: unknown): string {
  const text =
    err instanceof Error ? err.message || (err as { errors?: Error[] }).errors?.[0]?.message || '' : String(err);
  return text.split('\n', 1)[0]!.trim();
}

/** What happened to a connection, by SQLSTATE or socket code, and what to do about it (one clause each). */
function postgresHint(code: string): string {
  if (code === '28P01' || code === '28000') return 'check the user and password in DATABASE_URL';
  if (code === '3D000') return 'create the database, or fix its name in DATABASE_URL';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'check the host name in DATABASE_URL';
  if (code.startsWith('53'))
    return (
      'PostgreSQL is running but full (max_connections, or the CONNECTION LIMIT of the role or database); ' +
      'try again once other clients leave, or raise the limit'
    );
  if (code === '57P03') return 'PostgreSQL is running but starting up or shutting down; try again in a moment';
  if (code === 'ECONNREFUSED')
    return 'nothing listens there: start PostgreSQL there, or set DATABASE_URL to a server that runs';
  if (code === 'ETIMEDOUT' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH')
    return 'the server cannot be reached: check the host and port in DATABASE_URL and the network (firewall)';
  return 'start PostgreSQL there, or set DATABASE_URL to a server that runs';
}

/**
 * `err` of connecting to PostgreSQL at `url` as a one-line {@link StoreUnavailableError}; a privilege PostgreSQL
 * refused (42501, "permission denied for database d" or "schema s") names the GRANT for `role`.
 */
export function postgresUnavailable(err: unknown, url: string, role?: string): StoreUnavailableError {
  const code = errorCode(err, /timeout/i.test(firstLine(err)) ? 'ETIMEDOUT' : 'ERROR');
  const on = /permission denied for (database|schema) (\S+)/.exec(firstLine(err));
  const grant = on && `GRANT ${on[1] === 'schema' ? 'USAGE, CREATE' : 'CREATE'} ON ${on[1]!.toUpperCase()} ${on[2]}`;
  const hint =
    code === '42501' && on
      ? `report-etl needs CREATE on the ${on[1]} (docs/architecture.md "PostgreSQL privileges"): as its owner, run ` +
        `${grant} TO ${role ?? '<user>'}`
      : postgresHint(code);
  return new StoreUnavailableError('PostgreSQL', describeDatabaseUrl(url), code, firstLine(err), hint, { cause: err });
}

/** `err` as {@link postgresUnavailable} says it when it is one about connecting or privileges, else unchanged. */
export function explainPostgresError(err: unknown, url: string, role?: string): unknown {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (err instanceof StoreUnavailableError || typeof code !== 'string') return err;
  return /^(08|53|57P0|28|3D000|42501$|E[A-Z]+$)/.test(code) ? postgresUnavailable(err, url, role) : err;
}

/**
 * Applies the migrations, a refused privilege or a full server said in one line ({@link explainPostgresError}).
 * @throws StoreUnavailableError; what migrate throws otherwise
 */
export async function migrateExplained(
  pool: pg.Pool,
  logger: Logger,
  url: string = process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL,
): Promise<number[]> {
  try {
    return await migrate(pool, logger);
  } catch (err) {
    const role = await pool.query<{ u: string }>('SELECT current_user AS u').then(
      (r) => r.rows[0]?.u,
      () => undefined,
    );
    throw explainPostgresError(err, url, role);
  }
}

/**
 * Connects once to PostgreSQL at `url` and runs `SELECT 1`, within `timeoutMs`.
 * @throws StoreUnavailableError ({@link postgresUnavailable}) when the server is not reachable, full or refuses
 */
export async function checkPostgres(
  url: string = process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL,
  timeoutMs = STORE_CONNECT_TIMEOUT_MS,
): Promise<void> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeoutMs,
    application_name: 'report-etl',
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (err) {
    throw postgresUnavailable(err, url);
  } finally {
    await client.end().catch(() => undefined);
  }
}

const ONE_TRY = { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, enableOfflineQueue: false };

/**
 * Connects once to Redis at `url` and sends PING within `timeoutMs`, without ioredis' endless reconnecting.
 * @throws StoreUnavailableError when Redis is not reachable or refuses us (password)
 */
async function checkRedis(
  url: string = process.env.REDIS_URL ?? DEFAULT_REDIS_URL,
  timeoutMs = STORE_CONNECT_TIMEOUT_MS,
): Promise<void> {
  const probe = isRedisClusterUrl(url)
    ? makeCluster(parseRedisClusterUrl(url), { lazyConnect: true, retry: false })
    : new Redis(url, { ...ONE_TRY, connectTimeout: timeoutMs });
  let lastError: unknown;
  probe.on('error', (err: unknown) => (lastError = err));
  let timer: NodeJS.Timeout | undefined;
  try {
    const deadline = new Promise<never>((_, reject) => {
      const late = Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' });
      timer = setTimeout(() => reject(late), timeoutMs + 1_000);
    });
    await Promise.race([probe.connect().then(() => probe.ping()), deadline]);
  } catch (err) {
    const cause = lastError ?? err;
    const code = errorCode(cause, 'ERROR');
    const hint = /NOAUTH|WRONGPASS/.test(code)
      ? 'check the password in REDIS_URL'
      : 'start Redis there, or set REDIS_URL to a server that runs';
    throw new StoreUnavailableError('Redis', describeRedisUrl(url), code, firstLine(cause), hint, { cause });
  } finally {
    clearTimeout(timer);
    probe.disconnect();
  }
}

/** What {@link openStores} opens. */
export interface Stores {
  pool: pg.Pool;
  redis: Redis;
  /** Release steps, the pool and Redis on it already; add what you open, call `releaseAll()` once. */
  releasers: Releasers;
}

/** Options of {@link openStores}. */
interface StoresOptions {
  /** Most connections of the pool (default 10). */
  poolMax?: number;
  /** Apply the migrations (default true): every command that writes the run history does; read-only ones must not. */
  migrate?: boolean;
  /** How long the first connection to each store may take, in ms (default 5 000). */
  connectTimeoutMs?: number;
}

/**
 * Checks PostgreSQL (DATABASE_URL), opens the pool and migrates the run history (unless `migrate: false`) while it
 * checks Redis (REDIS_URL), then opens the process's Redis connection. On error, what was opened is released.
 * @throws StoreUnavailableError when either store cannot be reached or refuses the connection; migration errors
 */
export async function openStores(logger: Logger, o: StoresOptions = {}): Promise<Stores> {
  const releasers = new Releasers();
  const redisChecked = checkRedis(undefined, o.connectTimeoutMs);
  redisChecked.catch(() => undefined); // PostgreSQL's error comes first
  try {
    const pool = await openHistoryPool(logger, o);
    releasers.add(() => pool.end());
    if (o.migrate ?? true) await migrateExplained(pool, logger);
    await redisChecked;
    const redis = makeRedis(logger);
    releasers.add(() => redis.quit());
    return { pool, redis, releasers };
  } catch (err) {
    await releasers.releaseAll().catch(() => undefined);
    throw err;
  }
}

/**
 * The pool alone, checked and never migrated: for read-only commands (`runs`), which must work without Redis and
 * must not change the database they read.
 * @throws StoreUnavailableError as {@link checkPostgres}
 */
export async function openHistoryPool(
  logger: Logger,
  o: Pick<StoresOptions, 'poolMax' | 'connectTimeoutMs'> = {},
): Promise<pg.Pool> {
  await checkPostgres(undefined, o.connectTimeoutMs);
  return makePool(logger, undefined, o.poolMax ?? 10);
}
