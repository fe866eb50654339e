/**
 * User-dependent service users end to end: login by the admin server's callback and by a
 * pasted URL, runs on refreshed access tokens across access-token expiry, logout -> LOGIN_REQUIRED (at once, without
 * asking the token endpoint again) -> login -> runs again, invalid_scope, forged / replayed / expired states, scopes
 * quoted in a 403, and the refresh token absent from logs, Redis, the run history, the pages and /metrics.
 * Real PostgreSQL, Redis, the simulator and the admin server over HTTP.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdminServer } from '../src/admin/server.ts';
import type { EtlConfig } from '../src/config/schema.ts';
import { createLoginState } from '../src/history/login-states.ts';
import { completeLogin, startLogin } from '../src/login/login-flow.ts';
import { makeQueue, type RunQueue } from '../src/queue/queue.ts';
import { LoginFailedError } from '../src/report-api/index.ts';
import { secretKeyFromEnv, SECRET_KEY_ENV } from '../src/secret-box.ts';
import { DEFAULT_CLIENTS } from '../src/simulator/index.ts';
import { testPrefix, uniqueName } from './support/env.ts';
import { attemptFailure, type Harness, jobEntry, startHarness } from './support/harness.ts';
import { captureAll, loginOnSimulator, redisDump } from './support/user-login.ts';
import { adminServerOf } from './support/admin-login.ts';

const token = `tok-${randomBytes(12).toString('hex')}`;
const job = uniqueName('user_login');
const forbiddenJob = uniqueName('user_login_403');
const previousKey = process.env[SECRET_KEY_ENV];
let h: Harness;
let admin: AdminServer;
let queue: RunQueue;
let config: EtlConfig;
const log = captureAll();
const find = (n: string) => config.connections[n];

beforeAll(async () => {
  process.env[SECRET_KEY_ENV] = randomBytes(32).toString('hex');
  h = await startHarness({
    clients: [
      ...DEFAULT_CLIENTS,
      {
        clientId: 'scoped-no-access',
        clientSecret: 'scoped-secret',
        interfaceAccess: false,
        scopes: ['svc.pad', 'openid'],
      },
    ],
  });
  // Rows another test file left for a simulator that had this port before (connection names repeat across files).
  await h.pool.query('DELETE FROM etl.connection_logins WHERE base_url = $1', [h.sim.url]);
  queue = makeQueue(h.redis, testPrefix('ulq'));
  // The admin server serves the callback; its port is known only once it listens, so the config follows.
  const current: { config?: EtlConfig } = {};
  admin = await adminServerOf(h, queue, {
    logger: log.logger,
    auth: { token },
    connections: () => current.config!.connections,
  });
  config = h.config(
    {
      [job]: jobEntry({ name: 'Sales/Orders', parameters: { ROWS: '120' } }, { table: `${h.schema}.orders` }),
    },
    {
      auth: 'authorization_code',
      clientId: 'demo-user-client',
      clientSecret: undefined,
      scopes: ['svc.pad', 'offline_access'],
      redirectUri: `${admin.url}/oauth/callback`,
    },
  );
  const cc = h.config(
    { [forbiddenJob]: jobEntry({ name: 'Sales/Orders' }, { table: `${h.schema}.forbidden` }) },
    { clientId: 'scoped-no-access', clientSecret: 'scoped-secret' },
  );
  config = {
    ...config,
    connections: { ...config.connections, cc: cc.connections.sim! },
    jobs: { ...config.jobs, [forbiddenJob]: { ...cc.jobs[forbiddenJob]!, connection: 'cc' } },
  };
  current.config = config;
});

afterAll(async () => {
  await admin?.close();
  await queue?.close();
  await h?.pool.query('DELETE FROM etl.runs WHERE job = ANY($1)', [[job, forbiddenJob]]);
  await h?.pool.query('DELETE FROM etl.connection_logins WHERE base_url = $1', [h?.sim.url]);
  await h?.pool.query('DELETE FROM etl.login_states WHERE base_url = $1', [h?.sim.url]);
  await h?.close();
  if (previousKey === undefined) delete process.env[SECRET_KEY_ENV];
  else process.env[SECRET_KEY_ENV] = previousKey;
});

const run = (name = job) => h.run(config, name, {}, { logger: log.logger });
const adminGet = (path: string) =>
  fetch(`${admin.url}${path}`, { headers: { authorization: `Bearer ${token}` }, redirect: 'manual' });

/**
 * Starts a login on the admin page and logs in on the simulator; @returns the redirect to the callback (not followed).
 */
async function adminLoginRedirect(user = 'anna'): Promise<string> {
  // A GET starts nothing: a login begins with the page's POST.
  expect((await adminGet('/admin/connections/sim/login')).status).toBe(405);
  const start = await fetch(`${admin.url}/admin/connections/sim/login`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, origin: admin.url },
    redirect: 'manual',
  });
  expect(start.status).toBe(200);
  // The page sends the browser on to the server's login page (a meta refresh and a link).
  const pageText = await start.text();
  const authUrl = /<a id="continue" href="([^"]+)"/.exec(pageText)![1]!.replaceAll('&amp;', '&');
  expect(pageText).toContain(`<meta http-equiv="refresh" content="0;url=${authUrl.replaceAll('&', '&amp;')}">`);
  const u = new URL(authUrl);
  expect(u.origin + u.pathname).toBe(`${h.sim.url}/oauth/oauth2/v1/auth`);
  expect(Object.fromEntries(u.searchParams)).toMatchObject({
    response_type: 'code',
    client_id: 'demo-user-client',
    scope: 'svc.pad offline_access',
    redirect_uri: `${admin.url}/oauth/callback`,
  });
  expect(authUrl).toContain('scope=svc.pad%20offline_access');
  return loginOnSimulator(authUrl, user, `${user}-password`);
}

describe.sequential('a user-dependent service user', () => {
  it(
    'has no login yet: the run fails with LOGIN_REQUIRED naming the command, ' + 'without asking the token endpoint',
    async () => {
      const err = await attemptFailure(run());
      expect(err.code).toBe('LOGIN_REQUIRED');
      expect(err.retryable).toBe(false);
      expect(err.message).toContain('report-etl login sim');
      expect(h.sim.oauthCounters().grants.refresh_token).toBe(0);
      const { rows } = await h.pool.query(
        'SELECT stage, error_kind, retryable FROM etl.run_errors WHERE attempt_id = $1',
        [err.attemptId],
      );
      expect(rows).toEqual([{ stage: 'token', error_kind: 'LOGIN_REQUIRED', retryable: false }]);
      // The start request was never sent: no warning that the server may hold a report job.
      expect(log.text()).not.toContain('starting the report failed after the request was sent');
    },
  );

  it(
    'logs in through the admin page and the callback, then runs on refreshed tokens ' + 'across access-token expiry',
    async () => {
      const redirect = await adminLoginRedirect();
      expect(new URL(redirect).searchParams.get('session_state')).toBeTruthy();
      const callback = await fetch(redirect, { redirect: 'manual' });
      expect(callback.status).toBe(303);
      expect(callback.headers.get('location')).toBe('/admin/connections?loggedIn=sim');
      const page = await (await adminGet('/admin/connections?loggedIn=sim')).text();
      expect(page).toContain('is logged in');
      expect(page).toMatch(/<tr data-connection="sim">[\s\S]*logged in<\/span> since[\s\S]*svc.pad offline_access/);

      const first = await run();
      expect(first.status).toBe('succeeded');
      expect(first.rows).toBe(120);
      expect(h.sim.oauthCounters().grants.refresh_token).toBe(1);
      // The access token is shared: a second run inside its lifetime asks nobody.
      await run();
      expect(h.sim.oauthCounters().grants.refresh_token).toBe(1);
      h.sim.expireTokens();
      const third = await run();
      expect(third.status).toBe('succeeded');
      expect(h.sim.oauthCounters().grants.refresh_token).toBe(2);
      expect(h.sim.oauthCounters().refreshTokensIssued).toHaveLength(1);
    },
  );

  it('a logged-out user stops the runs with LOGIN_REQUIRED once, then fails fast until the next login', async () => {
    expect(h.sim.logoutUser('anna')).toBe(true);
    h.sim.expireTokens();
    const err = await attemptFailure(run());
    expect(err.code).toBe('LOGIN_REQUIRED');
    expect(err.message).toMatch(/connection "sim".*invalid_grant.*run `report-etl login sim`/);
    expect(h.sim.oauthCounters().refusedRefreshes).toBe(1);
    for (let i = 0; i < 3; i++) expect((await attemptFailure(run())).code).toBe('LOGIN_REQUIRED');
    // No hammering: the refused refresh token was sent once.
    expect(h.sim.oauthCounters().grants.refresh_token).toBe(3);
    const metrics = await (await adminGet('/metrics')).text();
    expect(metrics).toMatch(/report_etl_login_required\{connection="sim"\} 1/);
    expect(await (await adminGet('/admin/connections')).text()).toContain('LOGIN_REQUIRED</span>');

    // A new login (this time by the pasted URL) clears it.
    const started = await startLogin(h.pool, { name: 'sim', connection: config.connections.sim! }, 'cli');
    const pasted = await loginOnSimulator(started.url, 'anna', 'anna-password');
    const done = await completeLogin(h.pool, secretKeyFromEnv(), find, new URL(pasted).searchParams);
    expect(done.grantedScope).toBe('svc.pad offline_access');
    expect((await run()).status).toBe('succeeded');
    expect(await (await adminGet('/metrics')).text()).toMatch(/report_etl_login_required\{connection="sim"\} 0/);

    // The same redirect again: the state was used (replay), refused before any code exchange.
    const grants = h.sim.oauthCounters().grants.authorization_code;
    await expect(completeLogin(h.pool, secretKeyFromEnv(), find, new URL(pasted).searchParams)).rejects.toThrow(
      /used already or expired/,
    );
    const replayed = await fetch(pasted, { redirect: 'manual' });
    expect(replayed.status).toBe(400);
    expect(await replayed.text()).toContain('used already or expired');
    expect(h.sim.oauthCounters().grants.authorization_code).toBe(grants);
  });

  it('refuses a forged, a missing and an expired state', async () => {
    const forged = await fetch(
      `${admin.url}/oauth/callback?code=abc&session_state=x&state=${randomBytes(32).toString('base64url')}`,
      { redirect: 'manual' },
    );
    expect(forged.status).toBe(400);
    expect(await forged.text()).toContain('unknown, was used already or expired');
    const none = await fetch(`${admin.url}/oauth/callback?code=abc`, { redirect: 'manual' });
    expect(none.status).toBe(400);
    expect(await none.text()).toContain('carries no state');
    const expired = await createLoginState(h.pool, {
      ref: { connection: 'sim', baseUrl: h.sim.url, clientId: 'demo-user-client' },
      redirectUri: 'http://x/cb',
      scopes: ['svc.pad'],
      startedBy: 'cli',
      ttlMs: -1_000,
    });
    await expect(
      completeLogin(h.pool, secretKeyFromEnv(), find, new URLSearchParams({ code: 'abc', state: expired })),
    ).rejects.toThrow(/expired \(10 minutes; RFC 6749 section 10\.12\)/);
  });

  it(
    'ends a login with invalid_scope when the user has none of the scopes, ' + "with the server's words and what to do",
    async () => {
      const redirect = await adminLoginRedirect('nina');
      const params = new URL(redirect).searchParams;
      expect(params.get('error')).toBe('invalid_scope');
      expect(params.get('session_state')).toBeTruthy();
      const page = await fetch(redirect, { redirect: 'manual' });
      expect(page.status).toBe(400);
      const text = await page.text();
      expect(text).toContain('invalid_scope (The user has no access to any of the requested scopes)');
      expect(text).toContain('assign the requested scopes to the user');
      // The failed login left the earlier one in place.
      expect((await run()).status).toBe('succeeded');
    },
  );

  it('refuses 26 scopes at the simulator with the second invalid_scope redirect', async () => {
    const started = await startLogin(
      h.pool,
      {
        name: 'sim',
        connection: { ...config.connections.sim!, scopes: Array.from({ length: 26 }, (_, i) => `s${i}`) },
      },
      'cli',
    );
    const res = await fetch(started.url, { redirect: 'manual' });
    expect(res.status).toBe(302);
    const params = new URL(res.headers.get('location')!).searchParams;
    expect(params.get('error')).toBe('invalid_scope');
    const err = await completeLogin(h.pool, secretKeyFromEnv(), find, params).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LoginFailedError);
    expect((err as LoginFailedError).message).toMatch(/Too many scopes requested.*request at most 25 scopes/);
  });

  it("quotes the token response's scopes in a 403 and records them per connection", async () => {
    const err = await attemptFailure(run(forbiddenJob));
    expect(err.code).toBe('ACCESS_FORBIDDEN');
    expect(err.message).toContain('(token scopes: svc.pad openid)');
    const { rows } = await h.pool.query(
      'SELECT auth, granted_scope FROM etl.connection_logins WHERE connection = $1 AND base_url = $2',
      ['cc', h.sim.url],
    );
    expect(rows).toEqual([{ auth: 'client_credentials', granted_scope: 'svc.pad openid' }]);
  });

  it(
    'keeps every refresh token out of logs, Redis, the run history, ' + 'the pages and /metrics, and stores it sealed',
    async () => {
      const issued = h.sim.oauthCounters().refreshTokensIssued;
      expect(issued.length).toBeGreaterThanOrEqual(2);
      const { rows: sealed } = await h.pool.query<{ refresh_token_sealed: string }>(
        'SELECT refresh_token_sealed FROM etl.connection_logins WHERE connection = $1 AND ' +
          'base_url = $2 AND client_id = $3',
        ['sim', h.sim.url, 'demo-user-client'],
      );
      expect(sealed[0]!.refresh_token_sealed).toMatch(/^v1:/);
      const { rows: history } = await h.pool.query<{ t: string }>(
        `SELECT coalesce(json_agg(r)::text, '') || coalesce((SELECT json_agg(e)::text FROM etl.run_errors e WHERE ` +
          `e.attempt_id IN (SELECT attempt_id FROM etl.attempts WHERE job = $1)), '') AS t FROM etl.attempts r WHERE ` +
          `job = $1`,
        [job],
      );
      const { rows: states } = await h.pool.query<{ t: string }>(
        "SELECT coalesce(json_agg(s)::text, '') AS t FROM etl.login_states s WHERE base_url = $1",
        [h.sim.url],
      );
      const haystacks = {
        logs: log.text(),
        redis: await redisDump(h.redis),
        history: history[0]!.t,
        loginStates: states[0]!.t,
        sealedRow: sealed[0]!.refresh_token_sealed,
        page: await (await adminGet('/admin/connections')).text(),
        metrics: await (await adminGet('/metrics')).text(),
      };
      expect(haystacks.logs).toContain('user-dependent service user logged in');
      expect(haystacks.history).toContain('LOGIN_REQUIRED');
      for (const refreshToken of issued) {
        for (const [where, text] of Object.entries(haystacks))
          expect(text.includes(refreshToken), `refresh token found in ${where}`).toBe(false);
      }
    },
  );
});

it(
  'the login_required gauge counts a user-dependent connection of the live ' + 'jobs.yaml that never logged in',
  async () => {
    const { staticConfig } = await import('../src/config/live-config.ts');
    const fresh = h.config(
      {},
      {
        auth: 'authorization_code',
        clientId: `never-${uniqueName('c')}`,
        clientSecret: undefined,
        scopes: ['svc.pad'],
        redirectUri: 'https://etl.example.com/oauth/callback',
      },
    );
    const live = { ...config, connections: { ...config.connections, never: fresh.connections.sim! } };
    const second = await adminServerOf(h, queue, {
      logger: log.logger,
      auth: { token },
      liveConfig: staticConfig(live),
    });
    try {
      const text = await (
        await fetch(`${second.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })
      ).text();
      expect(text).toMatch(/report_etl_login_required\{connection="never"\} 1/);
      // The client-credentials connection is no login's business.
      expect(text).not.toMatch(/report_etl_login_required\{connection="cc"\}/);
    } finally {
      await second.close();
    }
  },
);
