/**
 * The access token against the simulator: one token for every process within its lifetime (Redis cache,
 * cross-process single flight), recovery from 401 (expired tokens, early expiry), key and TTL layout.
 */
import { Redis } from 'ioredis';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/simulator/index.ts';
import {
  makeReportClient,
  TokenCache,
  tokenCacheKey,
  withReportJob,
  type ReportClient,
} from '../src/report-api/index.ts';
import { pino } from 'pino';
import { silentLogger } from '../src/logger.ts';
import { REDIS_URL, uniqueName } from './support/env.ts';
import { readAll, testConnection } from './fixtures/report-api-helpers.ts';

const prefix = `${uniqueName('rapi_token')}:`;
const redises: Redis[] = [];
const clients: ReportClient[] = [];
let sim: Simulator;

function newRedis(): Redis {
  const r = new Redis(REDIS_URL);
  redises.push(r);
  return r;
}

async function newClient(
  overrides: Parameters<typeof testConnection>[1] = {},
  tokenRenewBeforeSeconds?: number,
): Promise<ReportClient> {
  const c = await makeReportClient({
    connection: testConnection(sim.url, overrides),
    connectionName: 'sim',
    redis: newRedis(),
    keyPrefix: prefix,
    retry: { baseDelayMs: 5, maxDelayMs: 50 },
    tokenRenewBeforeSeconds,
  });
  clients.push(c);
  return c;
}

const report = (rows: number) => ({
  mandant: '7777',
  name: 'Sales/Orders',
  outputType: 'json' as const,
  paging: 50,
  parameters: { ROWS: String(rows) },
});

async function runReport(client: ReportClient, rows = 60): Promise<number> {
  return withReportJob(client, report(rows), async (finished) => {
    let bytes = 0;
    for (let page = 1; ; page++) {
      const p = await client.openPage(finished.jobId, page);
      if (p === null) break;
      bytes += (await readAll(p.body)).length;
    }
    return bytes;
  });
}

beforeAll(async () => {
  sim = await startSimulator({ port: 0, jobDurationMs: 50 });
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  const r = redises[0] ?? newRedis();
  const keys = await r.keys(`${prefix}*`);
  if (keys.length > 0) await r.del(...keys);
  sim.setFaults({});
});
afterAll(async () => {
  for (const r of redises) await r.quit();
  await sim.close();
});

describe('token cache', () => {
  it(
    'reads the discovery document once per client and caches the token under the documented key ' +
      'with the remaining lifetime as TTL',
    async () => {
      sim.resetCounters();
      const client = await newClient();
      expect(sim.counters().discoveryRequests).toBe(1);
      expect(client.tokenEndpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/oauth\/oauth2\/v1\/token$/);
      const asked = Date.now();
      await runReport(client);
      const key = tokenCacheKey(prefix, sim.url, 'demo-client', 'demo-secret');
      expect(key).toMatch(new RegExp(`^${prefix}token:[0-9a-f]{16}$`));
      const entry = JSON.parse((await redises[0]!.get(key))!) as { accessToken: string; expiresAt: number };
      expect(entry.accessToken.split('.')).toHaveLength(3);
      // The token's whole 600 s from when it was asked for; the TTL at least what is left of it, never more than 600 s.
      expect(entry.expiresAt).toBeGreaterThanOrEqual(asked + 600_000);
      const ttl = await redises[0]!.pttl(key);
      expect(ttl).toBeGreaterThanOrEqual(entry.expiresAt - Date.now() - 1);
      expect(ttl).toBeLessThanOrEqual(600_000);
      expect(sim.counters().tokenRequests).toBe(1);
    },
  );

  it(
    'a wrong client secret does not ride on the token cached for the right one: ' +
      'it asks the token endpoint and fails at once',
    async () => {
      const wrongSecret = 'wrong-secret-B-7f3e91';
      sim.resetCounters();
      const good = await newClient();
      await runReport(good);
      expect(sim.counters().tokenRequests).toBe(1);

      const wrong = await newClient({ clientSecret: wrongSecret });
      const err = await wrong.startReport(report(10)).catch((e: unknown) => e);
      expect(err).toMatchObject({
        code: 'TOKEN_FAILED',
        stage: 'token',
        httpStatus: 401,
        oauthError: 'invalid_client',
        retryable: false,
      });
      expect((err as Error).message).not.toContain(wrongSecret);
      let c = sim.counters();
      expect(c.tokenRequests).toBe(2);
      expect(c.requests.start).toBe(1); // the good client's run only: the wrong secret started nothing

      // The right secret keeps its cached token; the wrong one left no entry of its own.
      await runReport(good);
      c = sim.counters();
      expect(c.tokenRequests).toBe(2);
      expect(c.openJobs).toEqual([]);
      const goodKey = tokenCacheKey(prefix, sim.url, 'demo-client', 'demo-secret');
      const wrongKey = tokenCacheKey(prefix, sim.url, 'demo-client', wrongSecret);
      expect(wrongKey).not.toBe(goodKey);
      const r = redises[0]!;
      expect(await r.exists(goodKey)).toBe(1);
      expect(await r.exists(wrongKey, `${wrongKey}:lock`)).toBe(0);

      // Neither secret is in any key or value this test left in Redis.
      const keys = await r.keys(`${prefix}*`);
      expect(keys.length).toBeGreaterThanOrEqual(2); // the token entry and the token request counter
      const values = await Promise.all(
        keys.map(async (k) => ((await r.type(k)) === 'string' ? await r.get(k) : JSON.stringify(await r.dump(k)))),
      );
      const everything = [...keys, ...values].join('\n');
      for (const secret of ['demo-secret', wrongSecret]) expect(everything).not.toContain(secret);
    },
  );

  it('two processes and two clients running reports concurrently need exactly one token request', async () => {
    sim.resetCounters();
    const child = spawn(process.execPath, [fileURLToPath(new URL('./fixtures/report-api-child.ts', import.meta.url))], {
      env: { ...process.env, SIM_URL: sim.url, KEY_PREFIX: prefix, REDIS_URL, REPORTS: '3' },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8');
    const ready = new Promise<void>((resolve) =>
      child.stdout.on('data', (d: string) => ((out += d), out.includes('ready\n') && resolve())),
    );
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const [a, b] = await Promise.all([newClient(), newClient()]);
    await ready;
    child.stdin.write('go\n');
    const local = await Promise.all([runReport(a), runReport(a), runReport(b), runReport(b)]);
    expect(await exited).toBe(0);
    const childResult = JSON.parse(out.split('\n').find((l) => l.startsWith('{'))!) as { rows: number; bytes: number };
    expect(childResult.rows).toBe(360);
    expect(childResult.bytes).toBeGreaterThan(0);
    expect(local.every((n) => n > 0)).toBe(true);
    const c = sim.counters();
    expect(c.jobsCreated).toBe(7);
    expect(c.tokenRequests).toBe(1);
    expect(c.unauthorized).toBe(0);
    expect(c.openJobs).toEqual([]);
  });

  it('many TokenCache instances on separate Redis connections racing for an empty cache fetch once', async () => {
    let fetches = 0;
    const key = `${prefix}token:race`;
    const caches = Array.from(
      { length: 8 },
      () =>
        new TokenCache({
          redis: newRedis(),
          key,
          renewBeforeMs: 30_000,
          fetchToken: async () => {
            fetches++;
            await new Promise((r) => setTimeout(r, 50));
            return { accessToken: `t${fetches}`, expiresInSeconds: 600 };
          },
          lockTtlMs: 5_000,
          waitTimeoutMs: 5_000,
          logger: silentLogger,
        }),
    );
    const got = await Promise.all(caches.flatMap((c) => [c.get(), c.get()]));
    expect(fetches).toBe(1);
    expect(new Set(got)).toEqual(new Set(['t1']));
    // compare-and-delete: a stale token does not remove the current one
    expect(await caches[0]!.invalidate('t0')).toBe(false);
    expect(await caches[1]!.invalidate('t1')).toBe(true);
    expect(await redises.at(-1)!.exists(key)).toBe(0);
    expect(await redises.at(-1)!.exists(`${key}:lock`)).toBe(0);
  });
});

describe('401 recovery', () => {
  it('after expireTokens() concurrent calls from two clients fetch exactly one new token and succeed', async () => {
    const [a, b] = await Promise.all([newClient(), newClient()]);
    await runReport(a);
    sim.resetCounters();
    sim.expireTokens();
    const bytes = await Promise.all([runReport(a), runReport(b), runReport(a), runReport(b)]);
    expect(bytes.every((n) => n > 0)).toBe(true);
    const c = sim.counters();
    expect(c.tokenRequests).toBe(1);
    expect(c.unauthorized).toBeGreaterThanOrEqual(1);
    expect(c.openJobs).toEqual([]);
  });

  it('renews across an early expiry (token dies at a fraction of expires_in)', async () => {
    const early = await startSimulator({
      port: 0,
      jobDurationMs: 30,
      tokenLifetimeSeconds: 2,
      faults: { tokenLifetimeFactor: 0.2 },
    });
    try {
      const client = await makeReportClient({
        connection: testConnection(early.url),
        connectionName: 'early',
        redis: newRedis(),
        keyPrefix: `${prefix}early:`,
        retry: { baseDelayMs: 5, maxDelayMs: 50 },
      });
      clients.push(client);
      // The token really lives 400 ms; the client renews only after 401s (expires_in says 2 s).
      const deadline = Date.now() + 1_500;
      let runs = 0;
      while (Date.now() < deadline) {
        expect(await runReport(client, 40)).toBeGreaterThan(0);
        runs++;
      }
      const c = early.counters();
      expect(runs).toBeGreaterThan(3);
      expect(c.unauthorized).toBeGreaterThanOrEqual(2);
      expect(c.tokenRequests).toBeGreaterThanOrEqual(3);
      // one new token per expiry, not one per call
      expect(c.tokenRequests).toBeLessThanOrEqual(c.unauthorized + 1);
      expect(c.openJobs).toEqual([]);
    } finally {
      await early.close();
    }
  });

  it('renews shortly before expiry without any 401', async () => {
    const short = await startSimulator({ port: 0, jobDurationMs: 30, tokenLifetimeSeconds: 1 });
    try {
      const client = await makeReportClient({
        connection: testConnection(short.url),
        connectionName: 'short',
        redis: newRedis(),
        keyPrefix: `${prefix}short:`,
        retry: { baseDelayMs: 5, maxDelayMs: 50 },
        tokenRenewBeforeSeconds: 30, // capped at half the 1 s lifetime
      });
      clients.push(client);
      const deadline = Date.now() + 1_600;
      while (Date.now() < deadline) await runReport(client, 20);
      const c = short.counters();
      expect(c.unauthorized).toBe(0);
      expect(c.tokenRequests).toBeGreaterThanOrEqual(3);
      expect(c.tokenRequests).toBeLessThanOrEqual(6);
    } finally {
      await short.close();
    }
  });
});

describe('logging', () => {
  it('logs each request (method, path, status, ms) at debug and never a secret, token or auth header', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) });
    const redis = newRedis();
    for (const credentials of ['header', 'body'] as const) {
      const client = await makeReportClient({
        connection: testConnection(sim.url, { credentials }),
        connectionName: `logged-${credentials}`,
        redis,
        keyPrefix: `${prefix}log-${credentials}:`,
        logger,
        retry: { baseDelayMs: 5, maxDelayMs: 50 },
      });
      clients.push(client);
      await runReport(client);
      sim.expireTokens(); // the next run goes through 401 -> new token
      await runReport(client);
    }
    const tokens = await Promise.all(
      (await redis.keys(`${prefix}log-*token:*`)).map(
        async (k) => (JSON.parse((await redis.get(k))!) as { accessToken: string }).accessToken,
      ),
    );
    expect(tokens).toHaveLength(2);
    const all = lines.join('');
    const requests = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'report-api request');
    expect(
      requests.some(
        (l) => l.method === 'DELETE' && l.status === 200 && typeof l.ms === 'number' && l.connection === 'logged-body',
      ),
    ).toBe(true);
    expect(requests.some((l) => l.status === 401)).toBe(true);
    for (const secret of ['demo-secret', 'Bearer', 'Basic', 'authorization', ...tokens])
      expect(all).not.toContain(secret);
  });
});
