/**
 * The Report Export Service simulator's protocol over real HTTP: discovery, tokens, 401/403, report
 * names, paging, job states, delete, counters and the /_sim control paths.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FAILING_MESSAGE,
  RIGHTS_MESSAGE,
  reportData,
  startSimulator,
  type Simulator,
  type SimulatorOptions,
} from '../src/simulator/index.ts';
import { waitFor } from './support/wait.ts';

const API = '/api/svcreport/v1';
const ISO_MS_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}[+-]\d{2}:\d{2}$/;
const sims: Simulator[] = [];

async function sim(opts: SimulatorOptions = {}): Promise<Simulator> {
  const s = await startSimulator({ jobDurationMs: 30, ...opts });
  sims.push(s);
  return s;
}

afterAll(async () => {
  await Promise.all(sims.map((s) => s.close()));
});

async function token(s: Simulator, id = 'demo-client', secret = 'demo-secret'): Promise<string> {
  const r = await request(`${s.url}/oauth/oauth2/v1/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`,
    },
    body: 'grant_type=client_credentials',
  });
  expect(r.statusCode).toBe(200);
  return ((await r.body.json()) as { access_token: string }).access_token;
}

async function call(
  s: Simulator,
  tok: string | undefined,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  body?: unknown,
) {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (tok) headers.authorization = `Bearer ${tok}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const r = await request(`${s.url}${API}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.body.text();
  return { status: r.statusCode, headers: r.headers, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

function start(
  s: Simulator,
  tok: string,
  name: string,
  body: Record<string, unknown> = { outputType: 'json', paging: 100 },
  mandant = '7777',
) {
  return call(s, tok, 'POST', `/report/${mandant}/${name}`, body);
}

/** The job once it is no longer Running. */
function finished(s: Simulator, tok: string, id: string): Promise<Record<string, unknown>> {
  return waitFor(`job ${id} to finish`, async () => {
    const job = (await call(s, tok, 'GET', `/jobs/${id}`)).json();
    return job.state !== 'Running' && job;
  });
}

describe('discovery and tokens', () => {
  let s: Simulator;
  beforeAll(async () => {
    s = await sim();
  });

  it('serves every discovery field with URLs under the base URL', async () => {
    const r = await request(`${s.url}/.well-known/openid-configuration`);
    expect(r.statusCode).toBe(200);
    const d = (await r.body.json()) as Record<string, unknown>;
    expect(d.token_endpoint).toBe(`${s.url}/oauth/oauth2/v1/token`);
    expect(d.authorization_endpoint).toBe(`${s.url}/oauth/oauth2/v1/auth`);
    for (const k of [
      'issuer',
      'token_revocation_endpoint',
      'userinfo_endpoint',
      'end_session_endpoint',
      'jwks_uri',
      'registration_endpoint',
    ]) {
      expect(String(d[k])).toMatch(new RegExp(`^${s.url}/`));
    }
    expect(d.scopes_supported).toEqual(['svc.pad', 'openid', 'email', 'profile', 'offline_access']);
    expect(d.token_endpoint_auth_signing_alg_values_supported).toEqual(['RS256']);
    expect(d.id_token_signing_alg_values_supported).toEqual(['RS256']);
  });

  it('issues tokens for credentials in the Basic header and in the body', async () => {
    const before = s.counters().tokenRequests;
    const viaHeader = await request(`${s.url}/oauth/oauth2/v1/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('demo-client:demo-secret').toString('base64')}`,
      },
      body: 'grant_type=client_credentials',
    });
    expect(viaHeader.statusCode).toBe(200);
    expect(viaHeader.headers['content-type']).toBe('application/json;charset=utf-8');
    const a = (await viaHeader.body.json()) as Record<string, unknown>;
    expect(a).toMatchObject({ token_type: 'Bearer', expires_in: 600 });
    const viaBody = await request(`${s.url}/oauth/oauth2/v1/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: 'demo-client',
        client_secret: 'demo-secret',
      }).toString(),
    });
    expect(viaBody.statusCode).toBe(200);
    const b = (await viaBody.body.json()) as Record<string, unknown>;
    expect(typeof a.access_token).toBe('string');
    expect(b.access_token).not.toBe(a.access_token);
    expect((await call(s, String(b.access_token), 'GET', '/jobs/x')).status).toBe(404);
    expect(s.counters().tokenRequests).toBe(before + 2);
  });

  it('refuses wrong credentials (401 invalid_client), a missing grant and a wrong content type (400)', async () => {
    const post = (headers: Record<string, string>, body: string) =>
      request(`${s.url}/oauth/oauth2/v1/token`, { method: 'POST', headers, body });
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const wrong = await post(form, 'grant_type=client_credentials&client_id=demo-client&client_secret=nope');
    expect(wrong.statusCode).toBe(401);
    expect(await wrong.body.json()).toMatchObject({ error: 'invalid_client' });
    const unknown = await post(
      { ...form, authorization: `Basic ${Buffer.from('who:demo-secret').toString('base64')}` },
      'grant_type=client_credentials',
    );
    expect(unknown.statusCode).toBe(401);
    expect(unknown.headers['www-authenticate']).toMatch(/^Basic/);
    const text = await unknown.body.text();
    expect(text).not.toContain('demo-secret');
    const noGrant = await post(form, 'client_id=demo-client&client_secret=demo-secret');
    expect(noGrant.statusCode).toBe(400);
    expect(await noGrant.body.json()).toMatchObject({ error: 'invalid_request' });
    const json = await post({ 'content-type': 'application/json' }, '{}');
    expect(json.statusCode).toBe(400);
    await json.body.dump();
  });

  it('refuses missing and unknown bearer tokens with 401 and counts them', async () => {
    s.resetCounters();
    const none = await call(s, undefined, 'GET', '/jobs/abc');
    expect(none.status).toBe(401);
    expect(none.text).toBe('');
    expect(none.headers['cache-control']).toBe('no-store');
    expect(none.headers['access-control-allow-origin']).toBe('*');
    expect((await call(s, 'not-a-token', 'POST', '/report/7777/Drift', { outputType: 'json' })).status).toBe(401);
    expect(s.counters().unauthorized).toBe(2);
    expect(s.counters().jobsCreated).toBe(0);
  });

  it('expires tokens after expires_in, after expires_in * tokenLifetimeFactor, and on expireTokens()', async () => {
    const short = await sim({ tokenLifetimeSeconds: 1 });
    const t1 = await token(short);
    expect((await call(short, t1, 'GET', '/jobs/x')).status).toBe(404);
    await waitFor('the 1 s token to expire', async () => (await call(short, t1, 'GET', '/jobs/x')).status === 401);

    const early = await sim({ tokenLifetimeSeconds: 600, faults: { tokenLifetimeFactor: 0.0005 } }); // 300 ms
    const r = await request(`${early.url}/oauth/oauth2/v1/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials&client_id=demo-client&client_secret=demo-secret',
    });
    const body = (await r.body.json()) as { access_token: string; expires_in: number };
    expect(body.expires_in).toBe(600);
    expect((await call(early, body.access_token, 'GET', '/jobs/x')).status).toBe(404);
    // Refused long before its announced 600 s: within the wait's deadline.
    await waitFor(
      'the token to expire early',
      async () => (await call(early, body.access_token, 'GET', '/jobs/x')).status === 401,
    );

    const t2 = await token(s);
    s.expireTokens();
    expect((await call(s, t2, 'GET', '/jobs/x')).status).toBe(401);
    const t3 = await token(s);
    expect((await call(s, t3, 'GET', '/jobs/x')).status).toBe(404);
    expect((await request(`${s.url}/_sim/expire-tokens`, { method: 'POST' })).statusCode).toBe(204);
    expect((await call(s, t3, 'GET', '/jobs/x')).status).toBe(401);
  });
});

describe('starting reports', () => {
  let s: Simulator;
  let tok: string;
  beforeAll(async () => {
    s = await sim({ jobDurationMs: 150 });
    tok = await token(s);
  });

  it('starts a job Running with id, empty message and ISO timestamps, then finishes with rows=;pages=', async () => {
    const r = await start(s, tok, 'Sales%2FOrders', { outputType: 'json', paging: 1000 });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.headers['cache-control']).toBe('no-store');
    const job = r.json();
    expect(job.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(job).toMatchObject({ state: 'Running', message: '' });
    expect(job.submittedAt).toMatch(ISO_MS_OFFSET);
    expect(job.startedAt).toMatch(ISO_MS_OFFSET);
    expect(job.finishedAt).toBeUndefined();
    const still = (await call(s, tok, 'GET', `/jobs/${String(job.id)}`)).json();
    expect(still.state).toBe('Running');
    const done = await finished(s, tok, String(job.id));
    expect(done.state).toBe('FinishedSuccess');
    expect(done.message).toBe('rows=2500;pages=3');
    expect(done.finishedAt).toMatch(ISO_MS_OFFSET);
    expect(Date.parse(String(done.finishedAt)) - Date.parse(String(done.startedAt))).toBe(150);
  });

  it('applies the name rules: %2F, %5C, default avw, explicit avx, forbidden characters', async () => {
    const state = async (name: string) => {
      const r = await start(s, tok, name);
      return r.status === 200 ? `${String(r.json().state)}:${String(r.json().message)}` : `${r.status}`;
    };
    expect(await state('Sales%2FOrders')).toBe('Running:');
    expect(await state('Sales%2FOrders.avw')).toBe('Running:');
    expect(await state('Sales%5COrders')).toBe('Running:');
    expect(await state('Sub%2FDeep%2FNested%20Report')).toBe('Running:');
    expect(await state('Finance%2FLedger.avx')).toBe('Running:');
    expect(await state('Finance%2FLedger')).toBe("FinishedError:Report 'Finance/Ledger.avw' not found");
    expect(await state('Nope')).toBe("FinishedError:Report 'Nope.avw' not found");
    expect(await state('Ums%C3%A4tze')).toBe('400');
    expect(await state('Sales%2FOrders%2D1')).toBe('400');
    expect(await state('Sales%2F..%2FOrders')).toBe('400');
    expect(await state('Sales/Orders')).toBe('404');
    const bad = await start(s, tok, 'Bad%24Name');
    expect(bad.headers['content-type']).toBe('application/problem+json');
    expect(bad.json()).toMatchObject({ status: 400 });

    const strict = await sim({ acceptBackslash: false });
    const t = await token(strict);
    expect((await start(strict, t, 'Sales%5COrders')).status).toBe(400);
    expect((await start(strict, t, 'Sales%2FOrders')).status).toBe(200);
    const sanitizing = await sim({ acceptEncodedSlash: false });
    const t2 = await token(sanitizing);
    expect((await start(sanitizing, t2, 'Sales%2FOrders')).status).toBe(400);
    expect((await start(sanitizing, t2, 'Sales%5COrders')).status).toBe(200);
  });

  it('replaces paging below 10 (or missing) by 10000 rows per page', async () => {
    for (const paging of [5, undefined, 0]) {
      const r = await start(s, tok, 'Drift', { outputType: 'json_compact', paging, parameters: { ROWS: '25000' } });
      const done = await finished(s, tok, String(r.json().id));
      expect(done.message).toBe('rows=25000;pages=3');
      const rows = async (page: number) =>
        (JSON.parse((await call(s, tok, 'GET', `/jobs/${String(done.id)}/output/${page}`)).text) as { data: unknown[] })
          .data.length;
      expect(await rows(1)).toBe(10_000);
      expect(await rows(3)).toBe(5_000);
    }
    const ten = await start(s, tok, 'Drift', { outputType: 'json', paging: 10, parameters: { ROWS: '25' } });
    expect((await finished(s, tok, String(ten.json().id))).message).toBe('rows=25;pages=3');
  });

  it('refuses unsupported output types and bodies with 400', async () => {
    expect((await start(s, tok, 'Drift', { outputType: 'csv' })).status).toBe(400);
    expect((await start(s, tok, 'Drift', { paging: 100 })).status).toBe(400);
    expect((await call(s, tok, 'POST', '/report/7777/Drift', '[1,2')).status).toBe(400);
    expect((await start(s, tok, 'Drift', { outputType: 'json' }, 'abc')).status).toBe(400);
  });

  it('ends the report Failing FinishedError with its multi-line message, and bad parameters too', async () => {
    const f = await start(s, tok, 'Failing');
    expect(f.json().state).toBe('Running');
    const done = await finished(s, tok, String(f.json().id));
    expect(done).toMatchObject({ state: 'FinishedError', message: FAILING_MESSAGE });
    expect(String(done.message).split('\n').length).toBe(3);
    expect(done.finishedAt).toMatch(ISO_MS_OFFSET);
    expect((await call(s, tok, 'GET', `/jobs/${String(done.id)}/output/1`)).status).toBe(404);
    const bad = await start(s, tok, 'Sales%2FOrders', { outputType: 'json', parameters: { ROWS: 'many' } });
    expect((await finished(s, tok, String(bad.json().id))).message).toMatch(/ROWS/);
  });

  it('answers a rights failure with HTTP 200, FinishedError, finishedAt and result []', async () => {
    const t = await token(s, 'no-rights-client', 'no-rights-secret');
    const r = await start(s, t, 'Sales%2FOrders');
    expect(r.status).toBe(200);
    const job = r.json();
    expect(job).toMatchObject({ state: 'FinishedError', message: RIGHTS_MESSAGE, result: [] });
    expect(job.finishedAt).toMatch(ISO_MS_OFFSET);
    expect((await call(s, t, 'DELETE', `/jobs/${String(job.id)}`)).status).toBe(200);
  });

  it('answers a client without interface access with 403 problem+json and SvcServletExceptionMessage', async () => {
    const t = await token(s, 'no-access-client', 'no-access-secret');
    const created = s.counters().jobsCreated;
    for (const r of [await start(s, t, 'Sales%2FOrders'), await call(s, t, 'GET', '/jobs/x')]) {
      expect(r.status).toBe(403);
      expect(r.headers['content-type']).toBe('application/problem+json');
      expect(String(r.headers.svcservletexceptionmessage)).toMatch(/no access to the service/);
      expect(r.json()).toMatchObject({
        status: 403,
        title: expect.any(String),
        type: expect.stringMatching(/\/erp\/authorization\/user-service-access-forbidden$/),
        instance: 'no-access-client',
        detail: expect.stringMatching(/\S/),
      });
    }
    expect(s.counters().jobsCreated).toBe(created);
  });

  it('filters the sales dates by FROM/TO', () => {
    const data = reportData('Sales/Orders.avw', { FROM: '2024-03-01', TO: '2024-03-08', ROWS: '500' }, 1)!;
    const at = data.columns.findIndex((c) => c.name === 'Erfasst Am');
    const times = Array.from({ length: data.rowCount }, (_, i) => Date.parse(data.row(i)[at]!));
    expect(Math.min(...times)).toBeGreaterThanOrEqual(Date.parse('2024-03-01T00:00:00Z'));
    expect(Math.max(...times)).toBeLessThan(Date.parse('2024-03-08T00:00:00Z'));
    expect(new Set(times.map((t) => new Date(t).getUTCDate())).size).toBe(7);
    expect(reportData('Sales/Orders.avw', { FROM: '2024-02-30' }, 1)!.failure).toMatch(/FROM/);
  });
});

describe('jobs, delete and counters', () => {
  it('deletes a job (empty 200), then answers 404 for it; counts requests and open jobs', async () => {
    const s = await sim();
    const tok = await token(s);
    s.resetCounters();
    const a = String((await start(s, tok, 'Stock%2FLevels')).json().id);
    const b = String((await start(s, tok, 'Empty')).json().id);
    expect(s.counters().openJobs.sort()).toEqual([a, b].sort());
    await finished(s, tok, a);
    const emptyDone = await finished(s, tok, b);
    expect(emptyDone.message).toBe('rows=0;pages=0');
    expect((await call(s, tok, 'GET', `/jobs/${b}/output/1`)).status).toBe(404);
    const del = await call(s, tok, 'DELETE', `/jobs/${a}`);
    expect(del.status).toBe(200);
    expect(del.text).toBe('');
    expect(del.headers['content-length']).toBe('0');
    const gone = await call(s, tok, 'GET', `/jobs/${a}`);
    expect(gone.status).toBe(404);
    expect(gone.headers['content-type']).toBe('application/problem+json');
    expect((await call(s, tok, 'GET', `/jobs/${a}/output/1`)).status).toBe(404);
    expect((await call(s, tok, 'DELETE', `/jobs/${a}`)).status).toBe(404);
    const c = s.counters();
    expect(c).toMatchObject({ jobsCreated: 2, jobsDeleted: 1, openJobs: [b] });
    expect(c.requests).toMatchObject({ start: 2, delete: 2, output: 2, token: 0 });
    expect(c.requests.status).toBeGreaterThanOrEqual(3);
    const viaHttp = await request(`${s.url}/_sim/counters`);
    expect(await viaHttp.body.json()).toEqual(c);
    expect((await request(`${s.url}/_sim/reset`, { method: 'POST' })).statusCode).toBe(204);
    expect(s.counters()).toMatchObject({ jobsCreated: 0, jobsDeleted: 0, openJobs: [b], requests: { start: 0 } });
  });
});

describe('timestamp formatting', () => {
  it('matches Intl for local wall time and offsets, across DST switches and odd zones', async () => {
    const { makeZonedFormatter, isoUtc } = await import('../src/simulator/time-format.ts');
    for (const timeZone of ['Europe/Zurich', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe', 'UTC']) {
      const z = makeZonedFormatter(timeZone);
      const intl = new Intl.DateTimeFormat('de-CH', {
        timeZone,
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
        hourCycle: 'h23',
      });
      let ms = Date.UTC(2019, 11, 31, 22, 59, 59, 999);
      for (let i = 0; i < 3000; i++) {
        ms += 3_600_000 * 7 + 1_234_567 + i;
        expect(z.txt(ms)).toBe(`${intl.format(new Date(ms)).replace(',', '')}.${String(ms % 1000).padStart(3, '0')}`);
        expect(Date.parse(z.iso(ms))).toBe(ms);
        expect(isoUtc(ms)).toBe(new Date(ms).toISOString());
      }
    }
    expect(makeZonedFormatter('Europe/Zurich').iso(Date.UTC(2024, 6, 1, 10))).toBe('2024-07-01T12:00:00.000+02:00');
    expect(makeZonedFormatter('UTC').iso(0)).toBe('1970-01-01T00:00:00.000+00:00');
  });
});
