/**
 * A hostile server's answers (docs/architecture.md "Limits", "Errors"), from a server of this file's own: a 300 MB
 * problem body neither takes a `report-etl run` process past 400 MB RSS nor leaves more than a bounded text in the run
 * history, the logs, Redis or the webhooks; a problem body with NUL and lone surrogates is still recorded; oversized
 * token answers and overlong access tokens fail clearly and reach Redis never; and the one redaction removes a secret
 * in every form a server may echo.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { makePool, makeRedis } from '../src/app/connections.ts';
import { resolveJob } from '../src/config/load.ts';
import { configSchema } from '../src/config/schema.ts';
import { boundJson, boundText, MAX_MESSAGE_CHARS, MAX_TEXT_CHARS, redactor } from '../src/failure-text.ts';
import { migrate } from '../src/history/migrate.ts';
import { silentLogger } from '../src/logger.ts';
import { runAttempt } from '../src/pipeline/run-attempt.ts';
import { makeReportClient } from '../src/report-api/index.ts';
import { testConnection } from './fixtures/report-api-helpers.ts';
import { runCli } from './support/cli-process.ts';
import { DATABASE_URL, REDIS_URL, uniqueName } from './support/env.ts';
import { redisEntries, startHooks, streamBody, type Hooks } from './support/hostile.ts';
import { deleteKeys, deleteRuns } from './support/queue-env.ts';
import { attemptFailure } from './support/harness.ts';

const PEAK_RSS = fileURLToPath(new URL('./fixtures/peak-rss.mjs', import.meta.url));
const jp = uniqueName('hostile');
const queuePrefix = uniqueName('hostq');
const keyPrefix = `${uniqueName('hostk')}:`;

let pool: pg.Pool;
let redis: Redis;
let server: Server;
let url: string;
let hooks: Hooks;
let dir: string;
/** Bytes the server wrote for the answer in hand. */
let written = 0;
let answerToken: (res: ServerResponse) => void;
let answerStart: (res: ServerResponse) => void;

const count = (n: number) => (written += n);
const json = (res: ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
const goodToken = (res: ServerResponse) => json(res, 200, { access_token: 'tok-hostile', expires_in: 600 });

beforeAll(async () => {
  pool = makePool(silentLogger, DATABASE_URL, 2);
  redis = makeRedis(silentLogger, REDIS_URL);
  await migrate(pool);
  hooks = await startHooks();
  dir = await mkdtemp(join(tmpdir(), 'report-etl-hostile-'));
  server = createServer((req, res) => {
    req.resume();
    const path = (req.url ?? '').split('?')[0]!;
    if (path === '/.well-known/openid-configuration') return json(res, 200, { token_endpoint: `${url}/token` });
    if (path === '/token') return answerToken(res);
    if (path.startsWith('/api/svcreport/v1/report/')) return answerStart(res);
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await hooks.close();
  await deleteRuns(pool, jp);
  await pool.query('DELETE FROM etl.job_alerts WHERE job LIKE $1', [`${jp}%`]);
  await deleteKeys(redis, queuePrefix);
  await deleteKeys(redis, keyPrefix.slice(0, -1));
  await pool.end();
  redis.disconnect();
});

const connection = () => ({
  baseUrl: url,
  clientId: 'hostile-client',
  clientSecret: 'hostile-secret',
  pollIntervalMs: 20,
  requestTimeoutMs: 60_000,
});

/** The history a job's attempts left: the attempt's error and its etl.run_errors row. */
async function recorded(job: string) {
  const { rows } = await pool.query<{
    status: string;
    error: string;
    error_kind: string;
    message: string;
    server_message: string | null;
    problem: Record<string, unknown> | null;
  }>(
    `SELECT a.status, a.error, e.error_kind, e.message, e.server_message, e.problem
       FROM etl.attempts a JOIN etl.run_errors e USING (attempt_id) WHERE a.job = $1`,
    [job],
  );
  return rows;
}

it('`report-etl run` survives a 300 MB problem body under 400 MB RSS; every text it leaves is bounded', async () => {
  const job = `${jp}_big403`;
  const configPath = join(dir, 'jobs.yaml');
  await writeFile(
    configPath,
    `connections:
  hostile: { baseUrl: "\${HOSTILE_URL}", clientId: hostile-client, clientSecret: "\${HOSTILE_SECRET}" }
alerts:
  generic: { webhook: "\${HOOKS}/generic", events: [failed] }
  slack: { webhook: "\${HOOKS}/slack", events: [failed], format: slack }
  teams: { webhook: "\${HOOKS}/teams", events: [failed], format: teams }
jobs:
  ${job}:
    connection: hostile
    report: { mandant: 7777, name: Sales/Orders }
    target: { table: public.${job} }
`,
  );
  answerToken = goodToken;
  answerStart = (res) =>
    streamBody(res, 403, 'application/problem+json', '{"type":"about:blank","title":"', 300_000_000, '"}', count);
  written = 0;
  const peakFile = join(dir, 'peak-rss');
  const run = await runCli(['run', job, '-c', configPath], {
    HOSTILE_URL: url,
    HOSTILE_SECRET: 'hostile-secret',
    HOOKS: hooks.url,
    REPORT_ETL_QUEUE_PREFIX: queuePrefix,
    LOG_LEVEL: 'debug',
    LOG_FORMAT: 'json',
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${PEAK_RSS}`,
    PEAK_RSS_FILE: peakFile,
  });
  expect(run.code, run.stderr.slice(-3000)).toBe(1);
  const peak = Number(await readFile(peakFile, 'utf8'));
  expect(peak).toBeGreaterThan(0);
  expect(peak).toBeLessThan(400 * 1024 * 1024);
  // The client stopped reading after 64 KiB: the server wrote what the sockets' buffers took, not 300 MB.
  expect(written).toBeLessThan(64 * 1024 * 1024);

  const [row, ...more] = await recorded(job);
  expect(more).toEqual([]);
  expect(row).toMatchObject({ status: 'failed', error_kind: 'ACCESS_FORBIDDEN', problem: null });
  expect(row!.server_message).toMatch(/^\{"type":"about:blank","title":"x+… \[cut: 300\.0 MB more\]$/);
  expect(row!.server_message!.length).toBeLessThanOrEqual(MAX_TEXT_CHARS);
  expect(row!.message.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS);
  expect(row!.error.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS + 1 + MAX_TEXT_CHARS);

  // Three webhook bodies, each well within what Slack and Teams take (Teams: 28 KB).
  await vi.waitFor(() => expect(hooks.bodies.map((b) => b.path).sort()).toEqual(['/generic', '/slack', '/teams']), {
    timeout: 30_000,
  });
  for (const b of hooks.bodies) {
    expect(b.bytes, b.path).toBeLessThan(28_000);
    expect(b.text, b.path).toContain('[cut: 300.0 MB more]');
  }
  // Logs, and whatever the run left in Redis (the alert queue's jobs and events).
  for (const line of run.stderr.split('\n')) expect(line.length).toBeLessThan(20_000);
  expect(run.stderr.length).toBeLessThan(200_000);
  const entries = await redisEntries(redis, `${queuePrefix}:`);
  expect(entries.length).toBeGreaterThan(0);
  for (const e of entries) expect(e.value.length, e.key).toBeLessThan(64 * 1024);
}, 180_000);

it('records a problem body with NUL, controls and lone surrogates, its long title cut with a note', async () => {
  const job = `${jp}_nul`;
  const config = configSchema.parse({
    connections: { hostile: connection() },
    jobs: { [job]: { connection: 'hostile', report: { mandant: 7777, name: 'Sales/Orders' }, target: { table: 't' } } },
  });
  const title = `No access\u0000 for you\u001b[31m \ud800 ${'y'.repeat(60_000)}`;
  answerToken = goodToken;
  answerStart = (res) =>
    res.writeHead(403, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ title, status: 403 }));
  await attemptFailure(runAttempt({ job: resolveJob(config, job), pool, redis, logger: silentLogger }));
  const [row] = await recorded(job);
  expect(row).toMatchObject({ status: 'failed', error_kind: 'ACCESS_FORBIDDEN' });
  expect(row!.message).toContain('was refused with 403: No access\ufffd for you\ufffd[31m \ufffd yyy');
  expect(row!.message).toMatch(/… \[cut: 5\d\.\d kB more\]$/);
  expect(row!.message.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS);
  expect(row!.problem!.status).toBe(403);
  expect(row!.problem!.title).toMatch(/^No access\ufffd for you\ufffd\[31m \ufffd y+… \[cut: 5\d\.\d kB more\]$/);
});

describe('token answers', () => {
  const start = async () => {
    const client = await makeReportClient({
      connection: testConnection(url, { clientId: 'hostile-client', clientSecret: 'hostile-secret' }),
      connectionName: 'hostile',
      redis,
      keyPrefix,
      retry: { attempts: 2, baseDelayMs: 5, maxDelayMs: 50 },
    });
    try {
      return await client
        .startReport({ mandant: '7777', name: 'Sales/Orders', outputType: 'json', paging: 1000, parameters: {} })
        .catch((e: unknown) => e as Error);
    } finally {
      await client.close();
    }
  };
  const tokenKeys = async () => (await redisEntries(redis, `${keyPrefix}token:`)).map((e) => e.key);

  it('a 200 MiB access token: TOKEN_FAILED after 64 KiB, nothing in Redis', async () => {
    answerToken = (res) =>
      streamBody(res, 200, 'application/json', '{"access_token":"', 200 * 1024 * 1024, '","expires_in":600}', count);
    written = 0;
    const err = await start();
    expect(err).toMatchObject({ code: 'TOKEN_FAILED', retryable: false });
    expect(err.message).toContain('answered 200 with more than 65536 bytes, not read further');
    expect(written).toBeLessThan(64 * 1024 * 1024);
    expect(await tokenKeys()).toEqual([]);
  });

  it('an access token over 8 KiB: TOKEN_FAILED naming its size, never stored', async () => {
    answerToken = (res) => json(res, 200, { access_token: 'a'.repeat(20_000), expires_in: 600 });
    const err = await start();
    expect(err).toMatchObject({ code: 'TOKEN_FAILED', retryable: false });
    expect(err.message).toContain('an access token of 20.0 kB, more than the 8192 bytes taken');
    expect(err.message).not.toContain('aaaa');
    expect(await tokenKeys()).toEqual([]);
  });

  it('a 20 MB error_description: TOKEN_FAILED, bounded', async () => {
    answerToken = (res) =>
      streamBody(res, 401, 'application/json', '{"error":"invalid_client","error_description":"', 20e6, '"}', count);
    written = 0;
    const err = await start();
    expect(err).toMatchObject({ code: 'TOKEN_FAILED', httpStatus: 401, retryable: false });
    expect(err.message).toContain('answered 401 with more than 65536 bytes');
    expect(err.message.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS);
    expect(written).toBeLessThan(20e6);
  });

  it('a long error_description is cut with a note of how much', async () => {
    answerToken = (res) =>
      json(res, 401, { error: 'invalid_client', error_description: `Bad client ${'z'.repeat(50_000)}` });
    const err = await start();
    expect(err).toMatchObject({ code: 'TOKEN_FAILED', httpStatus: 401, oauthError: 'invalid_client' });
    expect(err.message).toMatch(/: invalid_client \(Bad client z+… \[cut: 4\d\.\d kB more\]$/);
  });
});

describe('the one redaction', () => {
  const id = 'echo-client';
  const secret = 'Ech0 s3cr3t+/=%&"ö-x';
  const redact = redactor([secret, `${id}:${secret}`, undefined, '']);
  const b64 = (s: string, enc: 'base64' | 'base64url' = 'base64') => Buffer.from(s, 'utf8').toString(enc);
  const form = new URLSearchParams({ client_id: id, client_secret: secret }).toString();
  const lowerHex = (s: string) => s.replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase());

  it.each([
    ['literal', `invalid secret ${secret}!`],
    ['Basic header', `got Authorization: Basic ${b64(`${id}:${secret}`)}`],
    ['base64url of id:secret', `got ${b64(`${id}:${secret}`, 'base64url')}`],
    ['base64 of the secret alone', `got ${b64(secret)}`],
    ['base64 within a longer text', `got ${b64(`Basic ${id}:${secret} and more`)}`],
    ['form body (+ for space, upper-case hex)', `got body ${form}`],
    ['form body, lower-case hex', `got body ${lowerHex(form)}`],
    ['encodeURIComponent', `got ${encodeURIComponent(secret)}`],
    ['JSON-escaped', `got ${JSON.stringify({ secret })}`],
  ])('removes the secret echoed %s', (_, text) => {
    const out = redact(text);
    expect(out).toContain('[redacted]');
    for (const needle of [secret, 'Ech0', 's3cr3t', b64(secret).slice(4, 20), '%C3%B6', '%c3%b6'])
      expect(out).not.toContain(needle);
    expect(out.startsWith(text.slice(0, 3))).toBe(true);
  });

  it('leaves other texts alone, and no secret at all changes nothing', () => {
    expect(redact('Report execution failed: Division by zero')).toBe('Report execution failed: Division by zero');
    expect(redactor([])('a secret-free text')).toBe('a secret-free text');
  });
});

describe('bounded texts', () => {
  it('cut a text to its limit with a note of how much was cut, once', () => {
    const cut = boundText('x'.repeat(20_000_000));
    expect(cut.length).toBeLessThanOrEqual(MAX_TEXT_CHARS);
    expect(cut).toMatch(/^x+… \[cut: 20\.0 MB more\]$/);
    expect(boundText(cut)).toBe(cut);
    expect(boundText('short', 100, 1_500)).toBe('short… [cut: 1.5 kB more]');
    expect(boundText('short', 100, Infinity)).toBe('short… [cut: the rest unread]');
    expect(boundText('a\u0000b\ud800c\udc00\u{1f600}')).toBe('a\ufffdb\ufffdc\ufffd\u{1f600}');
  });

  it('bound a JSON value: every string, and the whole', () => {
    expect(boundJson({ title: 'x'.repeat(10_000), n: 1, 'k\u0000': ['a'], at: new Date(0) })).toEqual({
      title: expect.stringMatching(/^x+… \[cut: 7\.0 kB more\]$/),
      n: 1,
      'k\ufffd': ['a'],
      at: '1970-01-01T00:00:00.000Z',
    });
    const wide = boundJson(Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`m${i}`, 'v'.repeat(50)])));
    expect(wide).toEqual({ cut: expect.stringMatching(/^\{"m0":"v+","m1".*… \[cut: 5\d\.\d kB more\]$/) });
    expect((wide as { cut: string }).cut.length).toBeLessThanOrEqual(2 * MAX_TEXT_CHARS);
  });
});
