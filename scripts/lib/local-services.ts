/**
 * PostgreSQL and Redis for the demo and the tests on any machine with Node.js (docs/architecture.md "Tests"): the
 * servers at DATABASE_URL / REDIS_URL when they answer, else what this module starts — an embedded PostgreSQL (real
 * binaries from npm, data under `.local/`), a `redis-server` found on PATH, or a `redis:7` container through
 * testcontainers when Docker answers — each with a line saying which, and a stop().
 *
 * Only `npm run demo` and the vitest global setup load this (it needs devDependencies); the `report-etl` commands
 * never do: in production a missing database is an error, not something to start.
 */
import { fileURLToPath } from 'node:url';
import { relative } from 'node:path';
import { DEFAULT_DATABASE_URL, DEFAULT_REDIS_URL } from '../../src/app/connections.ts';
import { startEmbeddedPostgres } from './embedded-postgres.ts';
import { dockerUnavailableReason, findOnPath, startRedisContainer, startRedisServer } from './local-redis.ts';
import { freePort, hostPort, probePostgres, probeRedis } from './service-probes.ts';

/** The repository root: `.local/` (gitignored) lives there. */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Where the embedded PostgreSQL of the demo keeps its data (kept between runs, so initdb happens once). */
export const DEFAULT_POSTGRES_DATA_DIR = `${ROOT}.local/postgres`;

/** A PostgreSQL or Redis to use: the configured one, or one this process started. */
export interface LocalService {
  /** URL to connect to (DATABASE_URL / REDIS_URL for everything that runs after this). */
  url: string;
  /** `configured`: it answered at the configured URL; otherwise what was started. */
  source: 'configured' | 'embedded-postgres' | 'redis-server' | 'redis-container';
  /** One line for people, e.g. `using PostgreSQL at 127.0.0.1:5432` or `started redis-server … at 127.0.0.1:41234`. */
  line: string;
  /** Process id of a started server process (embedded PostgreSQL, redis-server). */
  pid?: number;
  /** Seconds from the decision to start a fallback until it answered (0 when the configured one was used). */
  startSeconds: number;
  /** The data folder of a started PostgreSQL. */
  dataDir?: string;
  /** Stops what was started and waits until it has gone; does nothing for a configured server. */
  stop(): Promise<void>;
}

/** Thrown when no server answers and no fallback can be started; the message says every way to get one. */
export class LocalServiceUnavailableError extends Error {
  readonly code = 'LOCAL_SERVICE_UNAVAILABLE';
  override readonly name = 'LocalServiceUnavailableError';
}

/**
 * Thrown when a server answers at the configured URL but refuses (password, database name): a fallback would hide it.
 */
export class ConfiguredServiceRefusedError extends Error {
  readonly code = 'CONFIGURED_SERVICE_REFUSED';
  override readonly name = 'ConfiguredServiceRefusedError';
}

/** Options of {@link ensurePostgres}. */
export interface EnsurePostgresOptions {
  /** URL to probe; default DATABASE_URL, else the local server. */
  url?: string;
  /** Data folder of the embedded PostgreSQL; default {@link DEFAULT_POSTGRES_DATA_DIR}. */
  dataDir?: string;
  /** Port of the embedded PostgreSQL; default a free one. */
  port?: number;
  /** Probe connect timeout in ms; default {@link PROBE_TIMEOUT_MS}. */
  probeTimeoutMs?: number;
}

/** Options of {@link ensureRedis}. */
export interface EnsureRedisOptions {
  /** URL to probe; default REDIS_URL, else the local server. */
  url?: string;
  /** PATH-style folder list searched for `redis-server`; default $PATH. */
  path?: string;
  /** Port of a started redis-server; default a free one. */
  port?: number;
  /** Probe connect timeout in ms; default {@link PROBE_TIMEOUT_MS}. */
  probeTimeoutMs?: number;
  /**
   * Why no Docker engine can run a container (undefined: one can); default asks testcontainers. A test passes its
   * own answer, since testcontainers finds a default socket whatever DOCKER_HOST says.
   */
  dockerUnavailableReason?: () => Promise<string | undefined>;
}

/** A folder as a person would like to read it: relative to the current one when inside it, else absolute. */
function shownPath(dir: string): string {
  const rel = relative(process.cwd(), dir);
  return rel === '' ? '.' : rel.startsWith('..') ? dir : rel;
}

const seconds = (since: number) => Math.round((performance.now() - since) / 100) / 10;
const noStop = async () => undefined;

/**
 * The PostgreSQL to use: the one at `url` when it answers, else an embedded PostgreSQL started on a free port
 * (initdb first when its data folder is new: seconds, once).
 * @throws ConfiguredServiceRefusedError when a server answers at `url` but refuses (e.g. 28P01 password, 3D000 no
 * database)
 * @throws Error when the embedded PostgreSQL cannot be started (its own output in the message)
 */
export async function ensurePostgres(options: EnsurePostgresOptions = {}): Promise<LocalService> {
  const url = options.url ?? process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL;
  const at = hostPort(url, 5432);
  const probe = await probePostgres(url, options.probeTimeoutMs);
  if (probe.kind === 'answers')
    return { url, source: 'configured', line: `using PostgreSQL at ${at}`, startSeconds: 0, stop: noStop };
  if (probe.kind === 'refuses') {
    throw new ConfiguredServiceRefusedError(
      `PostgreSQL at ${at} answers but refuses: ${probe.reason} (fix DATABASE_URL; an embedded PostgreSQL is ` +
        `started only when nothing answers)`,
    );
  }
  const started = performance.now();
  const dataDir = options.dataDir ?? DEFAULT_POSTGRES_DATA_DIR;
  const pg = await startEmbeddedPostgres({ dataDir, port: options.port ?? (await freePort()) });
  const startSeconds = seconds(started);
  return {
    url: pg.url,
    source: 'embedded-postgres',
    line:
      `started embedded PostgreSQL ${pg.version} at 127.0.0.1:${pg.port} in ${startSeconds} s` +
      `${pg.initialised ? ' (new cluster)' : ''}, data in ${shownPath(pg.dataDir)} (nothing ` +
      `answered at ${at}: ${probe.reason})`,
    pid: pg.pid,
    startSeconds,
    dataDir: pg.dataDir,
    stop: () => pg.stop(),
  };
}

/**
 * The Redis to use: the one at `url` when it answers; else `redis-server` from `path` on a free port; else a
 * `redis:7` container through testcontainers when a Docker engine answers.
 * @throws ConfiguredServiceRefusedError when a Redis answers at `url` but refuses (e.g. NOAUTH)
 * @throws LocalServiceUnavailableError when there is neither a redis-server nor Docker: one line naming both ways
 */
export async function ensureRedis(options: EnsureRedisOptions = {}): Promise<LocalService> {
  const url = options.url ?? process.env.REDIS_URL ?? DEFAULT_REDIS_URL;
  const at = hostPort(url, 6379);
  const probe = await probeRedis(url, options.probeTimeoutMs);
  if (probe.kind === 'answers')
    return { url, source: 'configured', line: `using Redis at ${at}`, startSeconds: 0, stop: noStop };
  if (probe.kind === 'refuses') {
    throw new ConfiguredServiceRefusedError(
      `Redis at ${at} answers but refuses: ${probe.reason} (fix REDIS_URL; ` +
        `a Redis is started only when nothing answers)`,
    );
  }
  const why = `nothing answered at ${at}: ${probe.reason}`;
  const started = performance.now();
  const binary = findOnPath('redis-server', options.path ?? process.env.PATH ?? '');
  if (binary) {
    const port = options.port ?? (await freePort());
    const redis = await startRedisServer(binary, port);
    const startSeconds = seconds(started);
    return {
      url: redis.url,
      source: 'redis-server',
      line: `started ${binary} at 127.0.0.1:${port} in ${startSeconds} s (${why})`,
      pid: redis.pid!,
      startSeconds,
      stop: () => redis.stop(),
    };
  }
  const dockerMissing = await (options.dockerUnavailableReason ?? dockerUnavailableReason)();
  if (dockerMissing === undefined) {
    const redis = await startRedisContainer();
    const startSeconds = seconds(started);
    return {
      url: redis.url,
      source: 'redis-container',
      line: `started a redis:7 container at ${hostPort(redis.url, 6379)} in ${startSeconds} s (${why})`,
      startSeconds,
      stop: () => redis.stop(),
    };
  }
  throw new LocalServiceUnavailableError(
    `No Redis answers at ${at} and none can be started here: install redis-server so that it is on PATH ` +
      `(apt-get install redis-server, brew install redis), or start Docker so that a redis:7 container can run ` +
      `(${dockerMissing}); or set REDIS_URL to a Redis that runs.`,
  );
}
