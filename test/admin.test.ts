/**
 * The admin HTTP server over real HTTP: health and readiness, metrics from etl.attempts / Redis / the queue, and
 * access control. The run and attempt pages are test/admin-run-pages.test.ts.
 */
import { createServer, type AddressInfo } from 'node:net';
import { get as httpGet } from 'node:http';
import { randomBytes } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import type { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  isAuthorized,
  isMetricsAuthorized,
  metricsTokenFromEnv,
  SESSION_COOKIE,
  sessionValue,
} from '../src/admin/auth.ts';
import { checkReadiness } from '../src/admin/health.ts';
import { DURATION_BUCKETS_SECONDS, tokenRequestsKey } from '../src/admin/metrics.ts';
import { startAdminServer, type AdminServer } from '../src/admin/server.ts';
import { makePool } from '../src/app/connections.ts';
import { silentLogger } from '../src/logger.ts';
import type { AttemptResult } from '../src/pipeline/run-attempt.ts';
import { makeQueue } from '../src/queue/queue.ts';
import { pruneHistory } from '../src/history/retention.ts';
import { testPrefix, uniqueName } from './support/env.ts';
import { attemptFailure, type Harness, jobEntry, startHarness } from './support/harness.ts';
import { adminSessionCookie, postLogin, adminServerOf } from './support/admin-login.ts';
import { insertTestAttempt } from './support/queue-env.ts';

const token = `tok-${randomBytes(12).toString('hex')}`;
const basic = { user: 'oncall', password: `pw-${randomBytes(8).toString('hex')}` };
const keyPrefix = `${testPrefix('adm')}:`;
// The run history is shared by every test file: our job names are unique, and assertions only look at them.
const failJob = uniqueName('adm_fail');
const okJob = uniqueName('adm_ok');
const edgeJob = uniqueName('adm_edge');

let h: Harness;
let queue: Queue;
let server: AdminServer;
let failedAttemptId: string;
let okResult: AttemptResult;

beforeAll(async () => {
  h = await startHarness();
  queue = makeQueue(h.redis, uniqueName('admq'));
  const config = h.config({
    [failJob]: jobEntry({ name: 'Failing', outputType: 'json' }, { table: `${h.schema}.failing` }),
    [okJob]: jobEntry(
      { name: 'Sales/Orders', outputType: 'json', paging: 50, parameters: { ROWS: '120' } },
      { table: `${h.schema}.orders` },
    ),
  });
  const err = await attemptFailure(h.run(config, failJob));
  failedAttemptId = err.attemptId;
  okResult = await h.run(config, okJob);

  server = await adminServerOf(h, queue, { auth: { token, basic }, keyPrefix });
}, 60_000);

afterAll(async () => {
  await server?.close();
  await queue?.obliterate({ force: true }).catch(() => undefined);
  await queue?.close();
  await h?.redis.del(tokenRequestsKey(keyPrefix));
  await h?.pool.query('DELETE FROM etl.runs WHERE job = ANY($1)', [[failJob, okJob, edgeJob]]);
  await h?.close();
});

const bearer = { authorization: `Bearer ${token}` };
const get = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, { headers, redirect: 'manual' });

describe('health and readiness', () => {
  it('/healthz answers 200 without credentials', async () => {
    const res = await get('/healthz');
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('ok\n');
  });

  it('/readyz answers 200 when PostgreSQL and Redis answer', async () => {
    const res = await get('/readyz');
    expect(res.status).toBe(200);
    const body = (await res.json()) as { ready: boolean; checks: Record<string, { ok: boolean }> };
    expect(body).toMatchObject({ ready: true, checks: { postgres: { ok: true }, redis: { ok: true } } });
  });

  it('/readyz answers 503 naming PostgreSQL when the pool cannot connect', async () => {
    const badPool = makePool(silentLogger, 'postgres://postgres@127.0.0.1:1/postgres', 1);
    const bad = await startAdminServer({
      pool: badPool,
      redis: h.redis,
      queue,
      logger: silentLogger,
      port: 0,
      auth: { token },
    });
    try {
      const res = await fetch(`${bad.url}/readyz`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as {
        ready: boolean;
        checks: { postgres: { ok: boolean; error?: string }; redis: { ok: boolean } };
      };
      expect(body.ready).toBe(false);
      expect(body.checks.postgres.ok).toBe(false);
      expect(body.checks.postgres.error).toMatch(/ECONNREFUSED|connect/);
      expect(body.checks.redis.ok).toBe(true);
      expect((await fetch(`${bad.url}/healthz`)).status).toBe(200);
    } finally {
      await bad.close();
      await badPool.end();
    }
  });

  it('a Redis that does not answer is named within the time limit', async () => {
    // A server that accepts the connection and never answers: only the check's own limit can end the PING.
    const silent = createServer((socket) => socket.on('error', () => undefined));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const badRedis = new Redis(`redis://127.0.0.1:${(silent.address() as AddressInfo).port}`, {
      lazyConnect: true,
      maxRetriesPerRequest: null,
      retryStrategy: () => null,
    });
    badRedis.on('error', () => undefined);
    try {
      const r = await checkReadiness({ pool: h.pool, redis: badRedis }, 300);
      expect(r.ready).toBe(false);
      expect(r.checks.postgres.ok).toBe(true);
      expect(r.checks.redis).toMatchObject({ ok: false, error: 'timed out after 300 ms' });
    } finally {
      badRedis.disconnect();
      silent.close();
    }
  });
});

/** The value of one sample line `name{labels} value` of an exposition text, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('metrics', () => {
  it(
    'derives runs, rows, bytes and durations from etl.attempts, ' +
      'token requests from Redis, queue depth from BullMQ',
    async () => {
      await h.redis.set(tokenRequestsKey(keyPrefix), '41');
      await h.redis.incr(tokenRequestsKey(keyPrefix));
      await queue.add(okJob, { job: okJob, trigger: 'manual', runKey: 'm1' }, { jobId: `${okJob}__m1` });
      await queue.add(okJob, { job: okJob, trigger: 'manual', runKey: 'm2' }, { jobId: `${okJob}__m2`, delay: 60_000 });
      const res = await get('/metrics', bearer);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/plain');
      const text = await res.text();
      expect(text).toContain('# TYPE report_etl_attempts_total counter');
      expect(text).toContain('# TYPE report_etl_attempt_duration_seconds histogram');
      expect(text).not.toContain('report_etl_runs_total');
      expect(sample(text, `report_etl_attempts_total{job="${failJob}",status="failed"}`)).toBe(1);
      expect(sample(text, `report_etl_attempts_total{job="${okJob}",status="succeeded"}`)).toBe(1);
      expect(sample(text, `report_etl_attempts_total{job="${okJob}",status="failed"}`)).toBeUndefined();
      expect(okResult.rows).toBe(120);
      expect(sample(text, `report_etl_rows_loaded_total{job="${okJob}"}`)).toBe(okResult.rows);
      expect(sample(text, `report_etl_bytes_loaded_total{job="${okJob}"}`)).toBe(okResult.bytes);
      expect(okResult.bytes).toBeGreaterThan(0);
      expect(sample(text, `report_etl_rows_loaded_total{job="${failJob}"}`)).toBeUndefined();

      const { rows } = await h.pool.query<{ duration_ms: string }>(
        'SELECT duration_ms FROM etl.attempts WHERE job = $1',
        [okJob],
      );
      const seconds = Number(rows[0]!.duration_ms) / 1000;
      expect(sample(text, `report_etl_attempt_duration_seconds_count{job="${okJob}"}`)).toBe(1);
      expect(sample(text, `report_etl_attempt_duration_seconds_sum{job="${okJob}"}`)).toBeCloseTo(seconds, 6);
      expect(sample(text, `report_etl_attempt_duration_seconds_bucket{le="+Inf",job="${okJob}"}`)).toBe(1);
      for (const le of DURATION_BUCKETS_SECONDS) {
        expect(sample(text, `report_etl_attempt_duration_seconds_bucket{le="${le}",job="${okJob}"}`)).toBe(
          seconds <= le ? 1 : 0,
        );
      }

      expect(sample(text, 'report_etl_token_requests_total')).toBe(42);
      expect(sample(text, 'report_etl_queue_jobs{state="waiting"}')).toBe(1);
      expect(sample(text, 'report_etl_queue_jobs{state="delayed"}')).toBe(1);
      expect(sample(text, 'report_etl_queue_jobs{state="failed"}')).toBe(0);
      await queue.remove(`${okJob}__m1`);
      await queue.remove(`${okJob}__m2`);
      const after = await (await get('/metrics', bearer)).text();
      expect(sample(after, 'report_etl_queue_jobs{state="waiting"}')).toBe(0);
    },
  );

  it(
    'a duration exactly on a bucket bound counts in that bucket (le is inclusive); ' +
      'running attempts are not counted',
    async () => {
      for (const [ms, status] of [
        [1000, 'succeeded'],
        [1001, 'failed'],
        [5000, 'succeeded'],
        [null, 'running'],
      ] as const) {
        const attemptId = crypto.randomUUID();
        await insertTestAttempt(h.pool, { attemptId, job: edgeJob });
        await h.pool.query(
          'UPDATE etl.attempts SET status = $2, duration_ms = $3, rows = 7, bytes = 70 WHERE attempt_id = $1',
          [attemptId, status, ms],
        );
      }
      const text = await (await get('/metrics', bearer)).text();
      const bucket = (le: string) =>
        sample(text, `report_etl_attempt_duration_seconds_bucket{le="${le}",job="${edgeJob}"}`);
      expect([bucket('1'), bucket('5'), bucket('15'), bucket('+Inf')]).toEqual([1, 3, 3, 3]);
      expect(sample(text, `report_etl_attempt_duration_seconds_sum{job="${edgeJob}"}`)).toBeCloseTo(7.001, 9);
      expect(sample(text, `report_etl_attempts_total{job="${edgeJob}",status="succeeded"}`)).toBe(2);
      expect(sample(text, `report_etl_attempts_total{job="${edgeJob}",status="failed"}`)).toBe(1);
      expect(sample(text, `report_etl_attempts_total{job="${edgeJob}",status="running"}`)).toBeUndefined();
      expect(sample(text, `report_etl_rows_loaded_total{job="${edgeJob}"}`)).toBe(14);
      expect(sample(text, `report_etl_bytes_loaded_total{job="${edgeJob}"}`)).toBe(140);
    },
  );

  it(
    'counters never drop when retention prunes old attempts: ' +
      'what was pruned is added back, and a second prune adds to it',
    async () => {
      const job = uniqueName('adm_prune');
      const add = async (ms: number, status: string, daysAgo: number) => {
        const attemptId = crypto.randomUUID();
        await insertTestAttempt(h.pool, { attemptId, job });
        await h.pool.query(
          `UPDATE etl.attempts SET status = $2, duration_ms = $3, rows = 5, bytes = 50, started_at = now() - ` +
            `make_interval(days => $4) WHERE attempt_id = $1`,
          [attemptId, status, ms, daysAgo],
        );
      };
      for (const [ms, status, days] of [
        [900, 'succeeded', 30],
        [4000, 'succeeded', 29],
        [20_000, 'failed', 28],
        [700, 'succeeded', 1],
        [1500, 'failed', 1],
      ] as const)
        await add(ms, status, days);
      const series = (text: string) =>
        [
          `report_etl_attempts_total{job="${job}",status="succeeded"}`,
          `report_etl_attempts_total{job="${job}",status="failed"}`,
          `report_etl_rows_loaded_total{job="${job}"}`,
          `report_etl_bytes_loaded_total{job="${job}"}`,
          `report_etl_attempt_duration_seconds_count{job="${job}"}`,
          `report_etl_attempt_duration_seconds_sum{job="${job}"}`,
          ...['1', '5', '30', '+Inf'].map(
            (le) => `report_etl_attempt_duration_seconds_bucket{le="${le}",job="${job}"}`,
          ),
        ].map((name) => sample(text, name));
      const before = series(await (await get('/metrics', bearer)).text());
      expect(before).toEqual([3, 2, 15, 150, 5, 27.1, 2, 4, 5, 5]);
      const pruned = await pruneHistory(h.pool, [job], new Date(Date.now() - 7 * 86_400_000));
      expect(pruned.attempts).toBe(3);
      expect((await h.pool.query('SELECT count(*)::int AS n FROM etl.attempts WHERE job = $1', [job])).rows[0].n).toBe(
        2,
      );
      expect(series(await (await get('/metrics', bearer)).text())).toEqual(before);
      // Later attempts grow the counters on top of what was pruned, and a second prune adds to it.
      await add(2000, 'succeeded', 20);
      await add(600, 'succeeded', 0);
      const grown = series(await (await get('/metrics', bearer)).text());
      expect(grown).toEqual([5, 2, 25, 250, 7, 29.7, 3, 6, 7, 7]);
      expect((await pruneHistory(h.pool, [job], new Date(Date.now() - 7 * 86_400_000))).attempts).toBe(1);
      expect(series(await (await get('/metrics', bearer)).text())).toEqual(grown);
    },
  );

  it('metricsPublic: true opens /metrics to every caller, as an explicit choice', async () => {
    const open = await adminServerOf(h, queue, { auth: { token }, metricsToken: 'm', metricsPublic: true, keyPrefix });
    try {
      const res = await fetch(`${open.url}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('report_etl_attempts_total');
      expect((await fetch(`${open.url}/admin/runs`)).status).toBe(401);
    } finally {
      await open.close();
    }
  });
});

describe('metrics access (METRICS_TOKEN, admin credentials, loopback)', () => {
  const metricsToken = `mtok-${randomBytes(12).toString('hex')}`;
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const status = async (url: string, headers: Record<string, string> = {}) =>
    (await fetch(url, { headers, redirect: 'manual' })).status;

  it(
    'with admin credentials set, /metrics needs them (bearer, ' +
      'basic or the login cookie); /healthz and /readyz stay open',
    async () => {
      const res = await get('/metrics');
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="report-etl metrics"');
      expect(await res.text()).not.toContain('report_etl');
      expect((await get('/metrics', { authorization: `Bearer ${token}x` })).status).toBe(401);
      expect((await get('/metrics', bearer)).status).toBe(200);
      expect((await get('/metrics', { authorization: `Basic ${b64(`${basic.user}:${basic.password}`)}` })).status).toBe(
        200,
      );
      const cookie = await adminSessionCookie(server.url, token);
      expect((await get('/metrics', { cookie })).status).toBe(200);
      expect((await get('/healthz')).status).toBe(200);
      expect((await get('/readyz')).status).toBe(200);
    },
  );

  it(
    'METRICS_TOKEN admits a scraper to /metrics only; ' + 'the admin token still reads it; wrong tokens are refused',
    async () => {
      const s = await adminServerOf(h, queue, { auth: { token }, metricsToken, keyPrefix });
      try {
        const scraper = { authorization: `Bearer ${metricsToken}` };
        const ok = await fetch(`${s.url}/metrics`, { headers: scraper });
        expect(ok.status).toBe(200);
        expect(await ok.text()).toContain('report_etl_token_requests_total');
        expect(await status(`${s.url}/metrics`, bearer)).toBe(200);
        const refused = await fetch(`${s.url}/metrics`);
        expect(refused.status).toBe(401);
        const body = await refused.text();
        expect(body).toContain('Bearer <METRICS_TOKEN>');
        expect(body).not.toContain(metricsToken);
        expect(await status(`${s.url}/metrics`, { authorization: `Bearer ${metricsToken.slice(0, -1)}` })).toBe(401);
        expect(await status(`${s.url}/metrics`, { authorization: `Basic ${b64(`x:${metricsToken}`)}` })).toBe(401);
        // The metrics token opens nothing else.
        expect(await status(`${s.url}/admin/runs`, scraper)).toBe(401);
        expect(await status(`${s.url}/admin/queues/api/queues`, scraper)).toBe(401);
        expect((await postLogin(s.url, metricsToken)).status).toBe(401);
        expect(await status(`${s.url}/healthz`)).toBe(200);
      } finally {
        await s.close();
      }
    },
  );

  it(
    'METRICS_TOKEN without admin credentials: ' +
      'required from loopback too, while the admin pages stay loopback-only',
    async () => {
      const s = await adminServerOf(h, queue, { auth: {}, metricsToken, keyPrefix });
      try {
        expect(await status(`${s.url}/metrics`)).toBe(401);
        expect(await status(`${s.url}/metrics`, { authorization: `Bearer ${metricsToken}` })).toBe(200);
        expect(await status(`${s.url}/admin/runs`)).toBe(200);
      } finally {
        await s.close();
      }
    },
  );

  it('with nothing configured, /metrics answers loopback callers only', async () => {
    const s = await adminServerOf(h, queue, { host: '0.0.0.0', auth: {}, metricsToken: '', keyPrefix });
    try {
      const port = new URL(s.url).port;
      expect(await status(`http://127.0.0.1:${port}/metrics`)).toBe(200);
      // A caller from another address: this machine's own non-loopback address, when it has one.
      const external = Object.values(networkInterfaces())
        .flat()
        .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
      if (external !== undefined) {
        const res = await fetch(`http://${external}:${port}/metrics`);
        expect(res.status).toBe(403);
        expect(await res.text()).toContain('set METRICS_TOKEN');
        expect(await status(`http://${external}:${port}/healthz`)).toBe(200);
      }
    } finally {
      await s.close();
    }
    const fakeReq = (remoteAddress: string, authorization?: string) =>
      ({
        socket: { remoteAddress },
        headers: { host: '127.0.0.1:3000', ...(authorization ? { authorization } : {}) },
      }) as unknown as Parameters<typeof isMetricsAuthorized>[0];
    expect(isMetricsAuthorized(fakeReq('10.1.2.3'), {}, undefined)).toBe(false);
    expect(isMetricsAuthorized(fakeReq('::1'), undefined, undefined)).toBe(true);
    expect(isMetricsAuthorized(fakeReq('10.1.2.3', `Bearer ${metricsToken}`), undefined, metricsToken)).toBe(true);
    expect(isMetricsAuthorized(fakeReq('127.0.0.1'), undefined, metricsToken)).toBe(false);
  });

  it('METRICS_TOKEN is read from the environment; an empty value counts as unset', () => {
    expect(metricsTokenFromEnv({ METRICS_TOKEN: 'abc' })).toBe('abc');
    expect(metricsTokenFromEnv({ METRICS_TOKEN: '' })).toBeUndefined();
    expect(metricsTokenFromEnv({})).toBeUndefined();
  });
});

describe('access control', () => {
  it.each([
    '/admin/runs',
    `/admin/runs/${'0'.repeat(8)}-0000-0000-0000-000000000000`,
    '/admin/runs/a_job/a_run',
    `/admin/attempts/${'0'.repeat(8)}-0000-0000-0000-000000000000`,
    '/admin/queues',
    '/admin/queues/api/queues',
    '/admin',
  ])('%s answers 401 without credentials', async (path) => {
    const res = await get(path);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
  });

  it('admits a bearer token, basic auth and the login cookie; refuses wrong ones', async () => {
    expect((await get('/admin/runs', bearer)).status).toBe(200);
    expect((await get('/admin/runs', { authorization: `Bearer ${token}x` })).status).toBe(401);
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    expect(
      (await get('/admin/runs', { authorization: `Basic ${b64(`${basic.user}:${basic.password}`)}` })).status,
    ).toBe(200);
    expect((await get('/admin/runs', { authorization: `Basic ${b64(`${basic.user}:wrong`)}` })).status).toBe(401);
    expect((await get('/admin/runs', { authorization: `Basic ${b64(`intruder:${basic.password}`)}` })).status).toBe(
      401,
    );

    const wrong = await postLogin(server.url, 'nope');
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    const login = await postLogin(server.url, token);
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe('/admin/runs');
    const setCookie = login.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).not.toContain(token);
    const cookie = setCookie.split(';')[0]!;
    expect((await get('/admin/runs', { cookie })).status).toBe(200);
    expect((await get('/admin/runs', { cookie: `${cookie}0` })).status).toBe(401);
  });

  it('logs in through a form that POSTs the token: 401 says if it was missing or wrong; no token in URLs', async () => {
    const form = await get('/admin/login');
    expect(form.status).toBe(200);
    expect(form.headers.get('cache-control')).toBe('no-store');
    const page = await form.text();
    expect(page).toContain('<form method="post" action="/admin/login" id="login" class="login">');
    expect(page).toContain('name="token" type="password"');
    expect(page).not.toContain('id="logout"');
    const said = async (res: Response) => /id="login-notice">([^<]*)/.exec(await res.text())?.[1];
    const missing = await postLogin(server.url, '');
    expect(missing.status).toBe(401);
    expect(await said(missing)).toMatch(/^No token was given/);
    const wrong = await postLogin(server.url, `${token}x`);
    expect(wrong.status).toBe(401);
    expect(await said(wrong)).toMatch(/^Wrong token/);
    // The old login link is not taken: the token would stay in the history.
    const link = await get(`/admin/login?token=${encodeURIComponent(token)}`);
    expect(link.status).toBe(400);
    expect(link.headers.get('set-cookie')).toBeNull();
    expect(await said(link)).toMatch(/no longer taken from the URL/);
    // A form posted from another site is refused.
    const forged = await fetch(`${server.url}/admin/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://evil.example' },
      body: `token=${encodeURIComponent(token)}`,
      redirect: 'manual',
    });
    expect(forged.status).toBe(403);
    // Every admin page has the Log out button.
    const cookie = await adminSessionCookie(server.url, token);
    for (const path of ['/admin/runs', '/admin/connections', `/admin/runs/${failJob}/${failedAttemptId}`])
      expect(await (await get(path, { cookie })).text(), path).toContain(
        '<form class="inline logout" method="post" action="/admin/logout"><button type="submit" id="logout">',
      );
  });

  it('bull-board is served with our queue', async () => {
    const ui = await get('/admin/queues', bearer);
    expect(ui.status).toBe(200);
    const html = await ui.text();
    expect(html).toContain('<div id="root"');
    // Nothing loaded from another host (bull-board's page asks one for web fonts); the way back is on the page.
    expect(html).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
    expect(html).toContain('<a id="report-etl-back" href="/admin"');
    const api = await get('/admin/queues/api/queues', bearer);
    expect(api.status).toBe(200);
    const body = (await api.json()) as {
      queues: Array<{ name: string; allowRetries: boolean; readOnlyMode: boolean }>;
    };
    expect(body.queues.map((q) => q.name)).toEqual(['report-etl']);
    // Read only: retries and cleans go through report-etl's replay, which applies its rules.
    expect(body.queues[0]).toMatchObject({ allowRetries: false, readOnlyMode: true });
    // Its bulk actions are refused too: "retry all" of the failed and "clean all" of the completed.
    for (const [method, path] of [
      ['PUT', '/admin/queues/api/queues/report-etl/retry/failed'],
      ['PUT', '/admin/queues/api/queues/report-etl/clean/completed'],
    ] as const) {
      const res = await fetch(`${server.url}${path}`, { method, headers: { ...bearer, origin: server.url } });
      expect(res.status, path).toBeGreaterThanOrEqual(400);
    }
  });

  it(
    'a session cookie lasts 12 h, ends with POST /admin/logout, ' + 'and is Secure under an https ADMIN_PUBLIC_URL',
    async () => {
      const s = await adminServerOf(h, queue, { auth: { token }, keyPrefix, publicUrl: 'https://etl.example.com' });
      const runs = async (cookie: string) => (await fetch(`${s.url}/admin/runs`, { headers: { cookie } })).status;
      try {
        const login = await postLogin(s.url, token);
        const setCookie = login.headers.get('set-cookie') ?? '';
        expect(setCookie).toMatch(/; Secure/);
        const cookie = setCookie.split(';')[0]!;
        expect(await runs(cookie)).toBe(200);
        const now = Math.floor(Date.now() / 1000);
        expect(await runs(`${SESSION_COOKIE}=${sessionValue(token, now - 12 * 3600 - 5)}`)).toBe(401);
        const other = `${SESSION_COOKIE}=${sessionValue(token, now - 11 * 3600)}`;
        expect(await runs(other)).toBe(200);
        // Signed with another issue time than it claims: refused.
        expect(await runs(other.replace(/=\d+/, `=${now}`))).toBe(401);

        const out = await fetch(`${s.url}/admin/logout`, {
          method: 'POST',
          headers: { cookie, origin: s.url },
          redirect: 'manual',
        });
        expect(out.status).toBe(303);
        expect(out.headers.get('location')).toBe('/admin/login?loggedOut');
        expect(out.headers.get('set-cookie')).toMatch(new RegExp(`^${SESSION_COOKIE}=; .*Max-Age=0`));
        // Ended on the server too: a copy of the cookie no longer opens anything; other sessions go on.
        expect(await runs(cookie)).toBe(401);
        expect(await runs(other)).toBe(200);
      } finally {
        await s.close();
      }
    },
  );

  it('without configured credentials only loopback callers naming this machine get in (no DNS rebinding)', async () => {
    const open = await adminServerOf(h, queue, { auth: {} });
    const port = Number(new URL(open.url).port);
    /** GET over loopback with the Host header a browser would send for `host`. */
    const as = (host: string, path: string) =>
      new Promise<number>((resolve, reject) => {
        httpGet({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        }).on('error', reject);
      });
    try {
      expect((await fetch(`${open.url}/admin/runs`)).status).toBe(200);
      expect(await as(`localhost:${port}`, '/admin/runs')).toBe(200);
      expect(await as(`[::1]:${port}`, '/metrics')).toBe(200);
      // A page of another site whose name was rebound to 127.0.0.1: its Host names that site.
      expect(await as(`evil.example:${port}`, '/admin/runs')).toBe(403);
      expect(await as(`evil.example:${port}`, '/metrics')).toBe(403);
      expect(await as(`evil.example:${port}`, '/admin/queues/api/queues')).toBe(403);
    } finally {
      await open.close();
    }
    const fakeReq = (remoteAddress: string, host = '127.0.0.1:3000') =>
      ({ socket: { remoteAddress }, headers: { host } }) as unknown as Parameters<typeof isAuthorized>[0];
    expect(isAuthorized(fakeReq('10.1.2.3'), {})).toBe(false);
    expect(isAuthorized(fakeReq('::1', '[::1]:3000'), {})).toBe(true);
    expect(isAuthorized(fakeReq('127.0.0.1'), undefined)).toBe(true);
    expect(isAuthorized(fakeReq('127.0.0.1', 'rebound.example:3000'), undefined)).toBe(false);
  });

  it('refuses a cross-origin POST even with valid credentials', async () => {
    const res = await fetch(`${server.url}/admin/runs/${failJob}/${failedAttemptId}/replay`, {
      method: 'POST',
      headers: { ...bearer, origin: 'http://evil.example' },
      redirect: 'manual',
    });
    expect(res.status).toBe(403);
    expect(await queue.getJobCounts('waiting', 'prioritized')).toEqual({ waiting: 0, prioritized: 0 });
  });
});
