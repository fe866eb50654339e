/**
 * The admin server against DNS rebinding and guessing (docs/architecture.md "Limits"): whatever credentials are
 * configured, `/admin…` and `/metrics` answer only a Host header naming this server (localhost, an IP address,
 * ADMIN_PUBLIC_URL's host, ADMIN_ALLOWED_HOSTS), and an address with 10 refused credentials within a minute is
 * answered 429, the right one included. Real HTTP with the Host header a browser would send.
 */
import { request } from 'node:http';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowedHostsFromEnv, RefusalLimit, type AdminAuth } from '../src/admin/auth.ts';
import { startAdminServer, type AdminServer } from '../src/admin/server.ts';
import { makePool, makeRedis } from '../src/app/connections.ts';
import { migrate } from '../src/history/migrate.ts';
import { silentLogger } from '../src/logger.ts';
import { makeQueue } from '../src/queue/queue.ts';
import { DATABASE_URL, REDIS_URL, uniqueName } from './support/env.ts';

const token = `tok-${uniqueName('adm')}`;
const basic = { user: 'oncall', password: `pw-${uniqueName('pw')}` };
let pool: pg.Pool;
let redis: Redis;
let queue: Queue;
const servers: AdminServer[] = [];

beforeAll(async () => {
  pool = makePool(silentLogger, DATABASE_URL, 2);
  redis = makeRedis(silentLogger, REDIS_URL);
  await migrate(pool);
  queue = makeQueue(redis, uniqueName('rebq'));
});

afterAll(async () => {
  for (const s of servers) await s.close();
  await queue.obliterate({ force: true }).catch(() => undefined);
  await queue.close();
  await pool.end();
  redis.disconnect();
});

async function start(auth: AdminAuth): Promise<{ port: number }> {
  const server = await startAdminServer({
    pool,
    redis,
    queue,
    logger: silentLogger,
    port: 0,
    auth,
    allowedHosts: ['etl.example.com'],
  });
  servers.push(server);
  return { port: Number(new URL(server.url).port) };
}

/** The login form's POST of `token`, as a browser at `host` sends it. */
const logIn = (host: string, token: string, from?: string) => ({
  host,
  path: '/admin/login',
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams({ token }).toString(),
  ...(from ? { from } : {}),
});

/** A request to 127.0.0.1:`port` with the given Host header, from `from` (a loopback address). */
function call(
  port: number,
  o: { host: string; path: string; method?: string; headers?: Record<string, string>; from?: string; body?: string },
): Promise<{ status: number; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: o.path,
        method: o.method ?? 'GET',
        localAddress: o.from,
        headers: { host: o.host, ...o.headers },
      },
      (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0, headers: res.headers });
      },
    );
    req.on('error', reject).end(o.body);
  });
}

describe('a Host that does not name this server is refused, with or without credentials', () => {
  it.each([
    ['a token', { token }],
    ['basic auth', { basic }],
    ['no credentials', {}],
  ])('with %s', async (_, auth) => {
    const { port } = await start(auth);
    const evil = `evil.example:${port}`;
    const bearer = { authorization: `Bearer ${token}` };
    const basicAuth = { authorization: `Basic ${Buffer.from(`${basic.user}:${basic.password}`).toString('base64')}` };
    const creds = 'token' in auth ? bearer : 'basic' in auth ? basicAuth : {};

    // The rebound page: the right token, a replay with its own origin, the pages, /metrics — all refused.
    const login = await call(port, logIn(evil, token));
    expect(login.status).toBe(403);
    expect(login.headers['set-cookie']).toBeUndefined();
    for (const path of ['/admin/runs', '/admin', '/admin/queues/api/queues', '/metrics'])
      expect((await call(port, { host: evil, path, headers: creds })).status, path).toBe(403);
    const replay = await call(port, {
      host: evil,
      path: '/admin/runs/some_job/some_run/replay',
      method: 'POST',
      headers: { ...creds, origin: 'http://evil.example' },
    });
    expect(replay.status).toBe(403);
    expect(await queue.getJobCounts('waiting', 'prioritized', 'delayed')).toEqual({
      waiting: 0,
      prioritized: 0,
      delayed: 0,
    });
    const smuggled = await call(port, { host: `evil.example@127.0.0.1:${port}`, path: '/admin/runs', headers: creds });
    expect(smuggled.status).toBe(403);
    // What is open to everyone stays open.
    expect((await call(port, { host: evil, path: '/healthz' })).status).toBe(200);

    // This server's own names: localhost, its addresses, and the configured name (any case, any port).
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, 'ETL.Example.COM:443'])
      expect((await call(port, { host, path: '/admin/runs', headers: creds })).status, host).toBe(
        'token' in auth || 'basic' in auth || !host.startsWith('ETL') ? 200 : 403,
      );
    if ('token' in auth) {
      const ok = await call(port, logIn('etl.example.com', token));
      expect(ok.status).toBe(303);
      expect(String(ok.headers['set-cookie'])).toContain('report_etl_admin=');
    }
  });
});

it('reads the allowed names from ADMIN_PUBLIC_URL and ADMIN_ALLOWED_HOSTS', () => {
  expect(
    allowedHostsFromEnv({
      ADMIN_PUBLIC_URL: 'https://ETL.example.com/',
      ADMIN_ALLOWED_HOSTS: ' a.internal, B.internal ,',
    }),
  ).toEqual(['a.internal', 'b.internal', 'etl.example.com']);
  expect(allowedHostsFromEnv({ ADMIN_PUBLIC_URL: 'not a url' })).toEqual([]);
});

describe('guessing', () => {
  it('10 wrong /admin/login tokens from an address: then 429, the right token too; other addresses go on', async () => {
    const { port } = await start({ token });
    const host = `127.0.0.1:${port}`;
    for (let i = 0; i < 10; i++) expect((await call(port, logIn(host, `guess${i}`, '127.0.0.2'))).status).toBe(401);
    const blocked = await call(port, logIn(host, token, '127.0.0.2'));
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(blocked.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect((await call(port, logIn(host, token, '127.0.0.3'))).status).toBe(303);
  });

  it('wrong bearer tokens count as much', async () => {
    const { port } = await start({ token });
    const host = `127.0.0.1:${port}`;
    const as = (t: string) => ({
      host,
      path: '/admin/runs',
      headers: { authorization: `Bearer ${t}` },
      from: '127.0.0.4',
    });
    for (let i = 0; i < 10; i++) expect((await call(port, as(`guess${i}`))).status).toBe(401);
    expect((await call(port, as(token))).status).toBe(429);
    // Asking without credentials is no guess.
    expect((await call(port, { host, path: '/admin/runs', from: '127.0.0.5' })).status).toBe(401);
    expect((await call(port, { ...as(token), from: '127.0.0.5' })).status).toBe(200);
  });

  it('a window ends', () => {
    const limit = new RefusalLimit(3, 60_000);
    for (let i = 0; i < 3; i++) limit.refused('a', 1_000);
    expect(limit.waitSeconds('a', 1_000)).toBe(60);
    expect(limit.waitSeconds('b', 1_000)).toBe(0);
    expect(limit.waitSeconds('a', 61_001)).toBe(0);
    limit.refused('a', 61_001);
    expect(limit.waitSeconds('a', 61_001)).toBe(0);
  });
});
