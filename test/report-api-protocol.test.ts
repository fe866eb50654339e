/**
 * The report client's wire protocol against a scripted HTTP server (real HTTP, real Redis): discovery,
 * token request shapes, common headers, 401/403/5xx handling, page resume verification.
 */
import { Redis } from 'ioredis';
import type { ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeReportClient, type ReportClient } from '../src/report-api/index.ts';
import { REDIS_URL, uniqueName } from './support/env.ts';
import {
  readAll,
  startScriptedServer,
  testConnection,
  type ScriptedServer,
  type SeenRequest,
} from './fixtures/report-api-helpers.ts';
import { waitFor } from './support/wait.ts';

const prefix = `${uniqueName('rapi_proto')}:`;
let redis: Redis;
const open: Array<{ client?: ReportClient; server: ScriptedServer }> = [];

beforeAll(() => {
  redis = new Redis(REDIS_URL);
});
afterEach(async () => {
  for (const o of open.splice(0)) {
    await o.client?.close();
    await o.server.close();
  }
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
});
afterAll(async () => {
  await redis.quit();
});

const JOB = {
  id: '0b7f3a52-1111-4a4a-9c9c-000000000001',
  state: 'Running',
  message: '',
  submittedAt: 'x',
  startedAt: 'x',
};

/** A server with discovery at the service's path, the token endpoint at an unusual path, and `api` for the rest. */
async function setup(
  api: (req: SeenRequest, res: ServerResponse, n: number) => void,
  opts: {
    credentials?: 'header' | 'body';
    requestTimeoutMs?: number;
    token?: (req: SeenRequest, res: ServerResponse, n: number) => void;
  } = {},
) {
  let tokens = 0;
  const server = await startScriptedServer((req, res, n) => {
    if (req.url === '/.well-known/openid-configuration') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ issuer: 'x', token_endpoint: `${server.url}/moved/oauth/v9/token-here` }));
    } else if (req.url === '/moved/oauth/v9/token-here') {
      tokens++;
      if (opts.token) return opts.token(req, res, tokens);
      res.writeHead(200, { 'content-type': 'application/json;charset=utf-8' });
      res.end(JSON.stringify({ access_token: `tok-${tokens}`, token_type: 'Bearer', expires_in: 600 }));
    } else api(req, res, n);
  });
  const client = await makeReportClient({
    connection: testConnection(server.url, {
      credentials: opts.credentials ?? 'header',
      requestTimeoutMs: opts.requestTimeoutMs ?? 5_000,
    }),
    connectionName: 'proto',
    redis,
    keyPrefix: prefix,
    retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 5 },
  });
  open.push({ client, server });
  return { server, client, tokenRequests: () => tokens };
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

const start = {
  mandant: '7777',
  name: 'Sales/Orders',
  outputType: 'json' as const,
  paging: 100,
  parameters: { FROM: '2024-01-01' },
};

describe('discovery and token request', () => {
  it('takes the token endpoint from the discovery document and sends Basic credentials by default', async () => {
    const { server, client } = await setup((_req, res) => json(res, 200, JOB));
    expect(client.tokenEndpoint).toBe(`${server.url}/moved/oauth/v9/token-here`);
    expect(server.seen.map((r) => r.url)).toEqual(['/.well-known/openid-configuration']);
    await client.startReport(start);
    const tokenReq = server.seen.find((r) => r.url === '/moved/oauth/v9/token-here')!;
    expect(tokenReq.method).toBe('POST');
    expect(tokenReq.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(tokenReq.headers.authorization).toBe(`Basic ${Buffer.from('demo-client:demo-secret').toString('base64')}`);
    expect(tokenReq.body).toBe('grant_type=client_credentials');
  });

  it('sends client_id and client_secret in the body when credentials is body', async () => {
    const { server, client } = await setup((_req, res) => json(res, 200, JOB), { credentials: 'body' });
    await client.startReport(start);
    const tokenReq = server.seen.find((r) => r.url.startsWith('/moved'))!;
    expect(tokenReq.headers.authorization).toBeUndefined();
    expect(Object.fromEntries(new URLSearchParams(tokenReq.body))).toEqual({
      grant_type: 'client_credentials',
      client_id: 'demo-client',
      client_secret: 'demo-secret',
    });
  });

  it('reports a token endpoint failure with status and OAuth error, never the secret', async () => {
    const { client } = await setup((_req, res) => json(res, 200, JOB), {
      token: (_req, res) => json(res, 401, { error: 'invalid_client', error_description: 'bad secret demo-secret' }),
    });
    const err = await client.startReport(start).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'TOKEN_FAILED',
      httpStatus: 401,
      oauthError: 'invalid_client',
      stage: 'token',
      retryable: false,
    });
    expect(JSON.stringify({ m: (err as Error).message, d: (err as { details?: unknown }).details })).not.toContain(
      'demo-secret',
    );
  });
});

describe('report_api calls', () => {
  it('carries Bearer, Accept and (POST) Content-Type, and encodes the report name', async () => {
    const { server, client } = await setup((_req, res) => json(res, 200, JOB));
    const job = await client.startReport(start);
    expect(job.id).toBe(JOB.id);
    const post = server.seen.find((r) => r.url.startsWith('/api/'))!;
    expect(post.method).toBe('POST');
    expect(post.url).toBe('/api/svcreport/v1/report/7777/Sales%2FOrders.avw');
    expect(post.headers.authorization).toBe('Bearer tok-1');
    expect(post.headers.accept).toBe('application/json');
    expect(post.headers['content-type']).toBe('application/json');
    expect(JSON.parse(post.body)).toEqual({ outputType: 'json', paging: 100, parameters: { FROM: '2024-01-01' } });
    await client.deleteJob(job.id);
    const del = server.seen.at(-1)!;
    expect([del.method, del.url, del.headers.authorization, del.headers.accept]).toEqual([
      'DELETE',
      `/api/svcreport/v1/jobs/${JOB.id}`,
      'Bearer tok-1',
      'application/json',
    ]);
    expect(del.headers['content-type']).toBeUndefined();
  });

  it('rejects bad names and paging before any request', async () => {
    const { server, client } = await setup((_req, res) => json(res, 200, JOB));
    const before = server.seen.length;
    await expect(client.startReport({ ...start, name: 'Sales/Ordérs', job: 'orders' })).rejects.toMatchObject({
      code: 'REPORT_NAME_INVALID',
    });
    await expect(client.startReport({ ...start, paging: 9 })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    expect(server.seen.length).toBe(before);
  });

  it('after a 401 drops the token, gets a new one and retries once; a second 401 is UNAUTHORIZED', async () => {
    let refuse = 1;
    const { server, client, tokenRequests } = await setup((_req, res) => {
      if (refuse-- > 0) return json(res, 401, {});
      json(res, 200, JOB);
    });
    await client.startReport(start);
    expect(tokenRequests()).toBe(2);
    const auths = server.seen.filter((r) => r.url.startsWith('/api/')).map((r) => r.headers.authorization);
    expect(auths).toEqual(['Bearer tok-1', 'Bearer tok-2']);
    refuse = 2;
    await expect(client.deleteJob(JOB.id)).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
      httpStatus: 401,
      stage: 'delete',
    });
    expect(tokenRequests()).toBe(3);
  });

  it('turns 403 into ACCESS_FORBIDDEN with the header text and problem body', async () => {
    const problem = {
      status: 403,
      title: 'Forbidden',
      type: 'https://docs/x',
      instance: 'svc-user',
      detail: 'engine says no',
    };
    const { client } = await setup((_req, res) =>
      json(res, 403, problem, { SvcServletExceptionMessage: 'User has no access to the service' }),
    );
    const err = await client.startReport(start).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'ACCESS_FORBIDDEN',
      httpStatus: 403,
      retryable: false,
      stage: 'start',
      serverMessage: 'User has no access to the service',
      problem,
    });
  });

  it('says the data-science licence may be missing on a bare 403 (also ServletExceptionMessage accepted)', async () => {
    let n = 0;
    const { client } = await setup((_req, res) => {
      if (n++ === 0) {
        res.writeHead(403, { 'content-length': '0' });
        return res.end();
      }
      res.writeHead(403, { ServletExceptionMessage: 'plain header', 'content-length': '0' });
      res.end();
    });
    const bare = await client.waitForJob(JOB.id).catch((e: unknown) => e);
    expect(bare).toMatchObject({ code: 'ACCESS_FORBIDDEN', stage: 'poll', serverMessage: undefined });
    expect((bare as Error).message).toMatch(/data-science licence/);
    await expect(client.waitForJob(JOB.id)).rejects.toMatchObject({ serverMessage: 'plain header' });
  });

  it(
    'retries 502/503/504 with backoff and gives HTTP_TRANSIENT when attempts run out; ' +
      'other statuses are HTTP_UNEXPECTED',
    async () => {
      let fails = 2;
      const { server, client } = await setup((req, res) => {
        if (req.method === 'DELETE') return json(res, 418, { detail: 'teapot here' });
        if (req.method === 'GET' && fails-- > 0) {
          res.writeHead(503, { 'content-type': 'text/plain' });
          return res.end('busy');
        }
        json(res, 200, req.method === 'GET' ? { ...JOB, state: 'FinishedSuccess', message: 'rows=3;pages=1' } : JOB);
      });
      await expect(client.waitForJob(JOB.id)).resolves.toMatchObject({ rows: 3, pages: 1 });
      expect(server.seen.filter((r) => r.method === 'GET' && r.url.startsWith('/api/')).length).toBe(3);
      fails = 10;
      await expect(client.waitForJob(JOB.id)).rejects.toMatchObject({
        code: 'HTTP_TRANSIENT',
        httpStatus: 503,
        retryable: true,
      });
      const err = await client.deleteJob(JOB.id).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'HTTP_UNEXPECTED', httpStatus: 418, stage: 'delete' });
      expect((err as Error).message).toContain('teapot here');
    },
  );

  it('does not send the start of a report twice after a 5xx: the server may have created the job already', async () => {
    const { server, client } = await setup((_req, res) => {
      res.writeHead(504, { 'content-type': 'text/plain' });
      res.end('gateway timeout');
    });
    await expect(client.startReport(start)).rejects.toMatchObject({
      code: 'HTTP_TRANSIENT',
      httpStatus: 504,
      retryable: true,
      stage: 'start',
    });
    expect(server.seen.filter((r) => r.method === 'POST' && r.url.startsWith('/api/')).length).toBe(1);
  });

  it('retries the start of a report after a 503 or 429: the server says it did not process it', async () => {
    const answers = [503, 429];
    const { server, client } = await setup((_req, res) => {
      const status = answers.shift();
      if (status) {
        res.writeHead(status, { 'content-type': 'text/plain' });
        return res.end('busy');
      }
      json(res, 200, JOB);
    });
    await expect(client.startReport(start)).resolves.toMatchObject({ id: JOB.id });
    expect(server.seen.filter((r) => r.method === 'POST' && r.url.startsWith('/api/')).length).toBe(3);
  });
});

describe('timeouts', () => {
  it(
    'treats a request that exceeds requestTimeoutMs as transient: retried, ' +
      'then HTTP_TRANSIENT; a start is sent once',
    async () => {
      let hang = 1;
      const { server } = await setup((req, res) => {
        if (hang-- > 0) return; // no answer at all
        json(res, 200, req.method === 'GET' ? { ...JOB, state: 'FinishedSuccess', message: 'rows=3;pages=1' } : JOB);
      });
      const client = await makeReportClient({
        connection: testConnection(server.url, { requestTimeoutMs: 150 }),
        connectionName: 'timeouts',
        redis,
        keyPrefix: prefix,
        retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 5 },
      });
      open.push({ client, server: { ...server, close: async () => {} } });
      const count = (method: string) =>
        server.seen.filter((r) => r.method === method && r.url.startsWith('/api/')).length;
      hang = 1;
      const t0 = Date.now();
      expect((await client.waitForJob(JOB.id)).rows).toBe(3);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
      expect(count('GET')).toBe(2);
      hang = 2;
      const err = await client.waitForJob(JOB.id).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'HTTP_TRANSIENT', stage: 'poll', cause: { code: 'UND_ERR_HEADERS_TIMEOUT' } });
      expect(count('GET')).toBe(4);
      hang = 1;
      const startErr = await client.startReport(start).catch((e: unknown) => e);
      expect(startErr).toMatchObject({
        code: 'HTTP_TRANSIENT',
        stage: 'start',
        cause: { code: 'UND_ERR_HEADERS_TIMEOUT' },
      });
      expect(count('POST')).toBe(1);
    },
  );
});

describe('page resume', () => {
  const page = Buffer.from(Array.from({ length: 5000 }, (_, i) => `row ${i}\n`).join(''));

  /**
   * Serves `page`, cutting the connection after `cut` bytes on the first `cuts` requests; `variant` alters later
   * answers.
   */
  function pageServer(cuts: number, cut: number, variant?: (b: Buffer) => Buffer) {
    let served = 0;
    return (_req: SeenRequest, res: ServerResponse) => {
      served++;
      const body = served > 1 && variant ? variant(page) : page;
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(body.length) });
      if (served <= cuts) {
        res.write(body.subarray(0, cut), () => setTimeout(() => res.socket?.destroy(), 5));
      } else res.end(body);
    };
  }

  it('re-requests a broken page and delivers every byte exactly once', async () => {
    const { server, client } = await setup(pageServer(2, 20_000));
    const p = (await client.openPage(JOB.id, 1))!;
    expect(p.contentLength).toBe(page.length);
    expect(p.contentType).toBe('text/plain');
    expect((await readAll(p.body)).equals(page)).toBe(true);
    expect(p.resumes()).toBe(2);
    expect(server.seen.filter((r) => r.url.endsWith('/output/1')).length).toBe(3);
  });

  it('fails with PAGE_BROKEN when the re-fetched bytes before the cut differ', async () => {
    const { client } = await setup(
      pageServer(1, 20_000, (b) => {
        const c = Buffer.from(b);
        c[19_990] = 0x58; // 'X' inside the 64 bytes before the cut
        return c;
      }),
    );
    const p = (await client.openPage(JOB.id, 1))!;
    await expect(readAll(p.body)).rejects.toMatchObject({ code: 'PAGE_BROKEN', stage: 'fetch' });
  });

  it('fails with PAGE_BROKEN after too many resumes, and returns null on 404', async () => {
    const { client } = await setup((req, res) => {
      if (req.url.endsWith('/output/2')) {
        res.writeHead(404, { 'content-length': '0' });
        return res.end();
      }
      pageServer(100, 1000)(req, res);
    });
    expect(await client.openPage(JOB.id, 2)).toBeNull();
    const p = (await client.openPage(JOB.id, 1))!;
    await expect(readAll(p.body)).rejects.toMatchObject({ code: 'PAGE_BROKEN' });
    expect(p.resumes()).toBe(3);
  });

  it('keeps backpressure: a consumer that stops reading stops the download', async () => {
    const pageBytes = 64 * 1024 * 1024;
    const piece = Buffer.alloc(64 * 1024, 'y');
    let written = 0;
    let blocked = 0;
    const { client } = await setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const write = (): void => {
        while (written < pageBytes) {
          written += piece.length;
          if (!res.write(piece)) {
            blocked += 1;
            return void res.once('drain', write);
          }
        }
        res.end();
      };
      write();
    });
    const p = (await client.openPage(JOB.id, 1))!;
    const iterator = (p.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
    const firstChunk = await iterator.next();
    expect(firstChunk.value!.length).toBeGreaterThan(0);
    // The server writes until the socket pushes back; then it waits for a drain that only reading would bring.
    await waitFor('the server to wait for a drain', () => blocked > 0 && written >= 1024 * 1024);
    // socket buffers and the stream's high-water marks hold a few MiB at most, far from the 64 MiB page
    expect(written).toBeLessThan(16 * 1024 * 1024);
    let read = firstChunk.value!.length;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) read += next.value.length;
    expect(read).toBe(pageBytes);
  });

  it('close() finishes even with a page body nobody reads, and twice', async () => {
    const { client } = await setup(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(Buffer.alloc(1024 * 1024)); // never ends
      },
      { requestTimeoutMs: 400 },
    );
    const p = (await client.openPage(JOB.id, 1))!;
    expect(p.page).toBe(1);
    await Promise.all([client.close(), client.close()]);
    p.body.destroy();
  });
});
