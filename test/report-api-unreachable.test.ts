/**
 * A server that cannot be reached: refused connections and DNS
 * failures at discovery, at the token endpoint and at the report calls are SERVER_UNREACHABLE (retryable) with what
 * to check, not TOKEN_FAILED with "check your credentials"; and neither an unreachable server nor a refused token
 * request warns that a report job may have been left on the server (no POST was ever sent).
 */
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeReportClient, ServerUnreachableError, type ReportClient } from '../src/report-api/index.ts';
import { isNotSentError, unreachableCode } from '../src/report-api/http.ts';
import { startSimulator, type Simulator } from '../src/simulator/index.ts';
import { REDIS_URL, uniqueName } from './support/env.ts';
import { startScriptedServer, testConnection, type ScriptedServer } from './fixtures/report-api-helpers.ts';

const prefix = `${uniqueName('rapi_unreach')}:`;
const LEFT_JOB_WARNING = 'the server may hold a report job';
let redis: Redis;
let closedUrl: string;
const clients: ReportClient[] = [];
const lines: string[] = [];
const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });

/** A base URL on 127.0.0.1 where nothing listens (a port just freed). */
async function closedBaseUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

async function client(baseUrl: string, overrides: Parameters<typeof testConnection>[1] = {}): Promise<ReportClient> {
  const c = await makeReportClient({
    connection: testConnection(baseUrl, overrides),
    connectionName: 'unreachable',
    redis,
    keyPrefix: prefix,
    logger,
    retry: { attempts: 3, baseDelayMs: 5, maxDelayMs: 20 },
  });
  clients.push(c);
  return c;
}

const sales = {
  mandant: '7777',
  name: 'Sales/Orders',
  outputType: 'json' as const,
  paging: 50,
  parameters: { ROWS: '20' },
};

/** The log lines at warn level or above. */
const warnings = () => lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level >= 40);

/** What every unreachable error must say, and not say. */
function expectHint(err: unknown): void {
  const message = (err as Error).message;
  expect(message).toContain('cannot be reached');
  expect(message).toContain('baseUrl');
  expect(message).toContain('the server is up');
  expect(message).toMatch(/proxy/);
  expect(message).not.toMatch(/credential|secret|REPORT_CLIENT/i);
  expect(message).not.toContain('demo-secret');
}

beforeAll(async () => {
  redis = new Redis(REDIS_URL);
  closedUrl = await closedBaseUrl();
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  lines.length = 0;
});
afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

describe('discovery', () => {
  it(
    'a refused connection is SERVER_UNREACHABLE at stage token, retryable, ' + 'naming the server and what to check',
    async () => {
      const err = await client(closedUrl).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ServerUnreachableError);
      expect(err).toMatchObject({
        code: 'SERVER_UNREACHABLE',
        stage: 'token',
        retryable: true,
        networkCode: 'ECONNREFUSED',
        details: { networkCode: 'ECONNREFUSED', server: closedUrl },
      });
      expect((err as Error).message).toContain(
        `the server ${closedUrl} cannot be reached (connection refused, ECONNREFUSED)`,
      );
      expectHint(err);
    },
  );

  it('a host name that does not resolve is SERVER_UNREACHABLE (ENOTFOUND, or EAI_AGAIN without DNS)', async () => {
    const err = await client('http://report-etl-test.invalid:8080').catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'SERVER_UNREACHABLE', stage: 'token', retryable: true });
    expect(['ENOTFOUND', 'EAI_AGAIN']).toContain((err as ServerUnreachableError).networkCode);
    expect((err as Error).message).toContain('http://report-etl-test.invalid:8080 cannot be reached (host name');
    expectHint(err);
  });
});

describe('token endpoint', () => {
  let discovery: ScriptedServer;
  beforeAll(async () => {
    // Discovery answers, but names a token endpoint where nothing listens.
    discovery = await startScriptedServer((_req, res) => {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ token_endpoint: `${closedUrl}/oauth/token` }));
    });
  });
  afterAll(async () => {
    await discovery.close();
  });

  it(
    'an unreachable token endpoint is SERVER_UNREACHABLE at stage token, ' + 'and no warning about a left report job',
    async () => {
      // Another port is another origin: named in tokenOrigin, as a login server of its own would be.
      const c = await client(discovery.url, { tokenOrigin: closedUrl });
      const err = await c.startReport(sales).catch((e: unknown) => e);
      expect(err).toMatchObject({
        code: 'SERVER_UNREACHABLE',
        stage: 'token',
        retryable: true,
        details: { server: closedUrl },
      });
      expect((err as Error).message).toMatch(/^POST \/oauth\/token failed: /);
      expectHint(err);
      expect(isNotSentError(err)).toBe(true);
      expect(discovery.seen.filter((r) => r.method === 'POST')).toEqual([]);
      expect(warnings()).toEqual([]);
    },
  );
});

describe('report calls', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ port: 0, jobDurationMs: 30 });
  });
  afterAll(async () => {
    await sim.close();
  });

  it(
    'a refused token request is TOKEN_FAILED and does not warn that a report job ' + 'may be left on the server',
    async () => {
      sim.resetCounters();
      const c = await client(sim.url, { clientSecret: 'wrong-secret-for-warning-test' });
      const err = await c.startReport(sales).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'TOKEN_FAILED', stage: 'token', httpStatus: 401, retryable: false });
      expect(sim.counters().requests.start ?? 0).toBe(0);
      expect(lines.join('')).not.toContain(LEFT_JOB_WARNING);
      expect(warnings()).toEqual([]);
    },
  );

  it(
    'a server that goes down after the token: start and poll are SERVER_UNREACHABLE at ' +
      'their stage, without the warning',
    async () => {
      const down = await startSimulator({ port: 0, jobDurationMs: 30 });
      const c = await client(down.url);
      const job = await c.startReport(sales); // discovery, token and one report job while the server is up
      await down.close();
      const startErr = await c.startReport(sales).catch((e: unknown) => e);
      expect(startErr).toMatchObject({
        code: 'SERVER_UNREACHABLE',
        stage: 'start',
        retryable: true,
        networkCode: 'ECONNREFUSED',
        details: { server: down.url },
      });
      expect((startErr as Error).message).toMatch(
        /^POST \/api\/svcreport\/v1\/report\/7777\/Sales%2FOrders\.avw failed: /,
      );
      expectHint(startErr);
      const pollErr = await c.waitForJob(job.id).catch((e: unknown) => e);
      expect(pollErr).toMatchObject({ code: 'SERVER_UNREACHABLE', stage: 'poll', retryable: true });
      const pageErr = await c.openPage(job.id, 1).catch((e: unknown) => e);
      expect(pageErr).toMatchObject({ code: 'SERVER_UNREACHABLE', stage: 'fetch', retryable: true });
      expect(lines.join('')).not.toContain(LEFT_JOB_WARNING);
    },
  );
});

describe('unreachableCode', () => {
  const withCode = (code: string) => Object.assign(new Error(code), { code });
  it.each(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT'])(
    '%s means unreachable, also as a cause',
    (code) => {
      expect(unreachableCode(withCode(code))).toBe(code);
      expect(unreachableCode(new Error('wrapped', { cause: withCode(code) }))).toBe(code);
    },
  );

  it('refused, DNS and connect timeout prove a start was never sent; host or network unreachable do not', () => {
    for (const code of ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT'])
      expect(isNotSentError(withCode(code)), code).toBe(true);
    for (const code of ['EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET'])
      expect(isNotSentError(withCode(code)), code).toBe(false);
  });

  it(
    'an AggregateError of refused addresses (happy eyeballs) is unreachable; ' +
      'resets and timeouts after connecting are not',
    () => {
      expect(unreachableCode(new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')]))).toBe(
        'ECONNREFUSED',
      );
      expect(unreachableCode(new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNRESET')]))).toBeUndefined();
      for (const code of ['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_SOCKET'])
        expect(unreachableCode(withCode(code))).toBeUndefined();
    },
  );
});
