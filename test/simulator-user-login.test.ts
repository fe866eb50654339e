/**
 * The simulator's user-dependent service user: refresh-token validity of 60 days with
 * offline access and 10 hours without (docs/report-export-service.md "Limits", on the simulator's clock), the adoption
 * of a logged-in session (docs/report-export-service.md "User-dependent service user" step 2), trusted vs public
 * clients at the token endpoint, single-use codes, logout.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/simulator/index.ts';
import { loginOnSimulator } from './support/user-login.ts';

let sim: Simulator;
const REDIRECT = 'https://etl.example.com/oauth/callback';
beforeAll(async () => {
  sim = await startSimulator();
});
afterAll(async () => {
  await sim?.close();
});

const authUrl = (clientId: string, scope = 'svc.pad offline_access') =>
  `${sim.url}/oauth/oauth2/v1/auth?` +
  new URLSearchParams({ response_type: 'code', client_id: clientId, scope, redirect_uri: REDIRECT, state: 's1' });

async function token(form: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${sim.url}/oauth/oauth2/v1/token`, { method: 'POST', body: new URLSearchParams(form) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function codeFor(user: string, clientId = 'demo-user-client'): Promise<string> {
  const location = new URL(await loginOnSimulator(authUrl(clientId), user, `${user}-password`));
  expect(location.searchParams.get('state')).toBe('s1');
  return location.searchParams.get('code')!;
}

it('refresh tokens live 10 hours without offline access and 60 days with it, on the simulator clock', async () => {
  const otto = await token({
    grant_type: 'authorization_code',
    client_id: 'demo-user-client',
    code: await codeFor('otto'),
    redirect_uri: REDIRECT,
  });
  expect(otto.status).toBe(200);
  expect(otto.body).toMatchObject({ token_type: 'Bearer', expires_in: 600, scope: 'svc.pad' });
  const anna = await token({
    grant_type: 'authorization_code',
    client_id: 'demo-user-client',
    code: await codeFor('anna'),
    redirect_uri: REDIRECT,
  });
  expect(anna.body.scope).toBe('svc.pad offline_access');
  const refresh = (t: unknown) =>
    token({ grant_type: 'refresh_token', client_id: 'demo-user-client', refresh_token: String(t) });
  const first = await refresh(otto.body.refresh_token);
  expect(first.status).toBe(200);
  expect(first.body.refresh_token).toBeUndefined();
  sim.advanceClock(10 * 3_600_000 + 1_000);
  expect(await refresh(otto.body.refresh_token)).toEqual({
    status: 400,
    body: { error: 'invalid_grant', error_description: 'Token is not active' },
  });
  expect((await refresh(anna.body.refresh_token)).status).toBe(200);
  sim.advanceClock(60 * 86_400_000);
  expect((await refresh(anna.body.refresh_token)).status).toBe(400);
});

it(
  'adopts a logged-in session, uses a code once, asks a trusted client for its secret, ' +
    'and logout kills the refresh token',
  async () => {
    // Log in with the password: the session cookie is set.
    const page = await fetch(authUrl('demo-trusted-user-client'));
    const html = await page.text();
    const hidden = new URLSearchParams(
      [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)]
        .slice(0, 5)
        .map((m) => [m[1]!, m[2]!]),
    );
    const first = await fetch(`${sim.url}/oauth/oauth2/v1/auth`, {
      method: 'POST',
      redirect: 'manual',
      body: new URLSearchParams({ ...Object.fromEntries(hidden), username: 'anna', password: 'anna-password' }),
    });
    const cookie = first.headers.get('set-cookie')!.split(';')[0]!;
    // A second login page offers the session; adopting it needs no password.
    const again = await (await fetch(authUrl('demo-trusted-user-client'), { headers: { cookie } })).text();
    expect(again).toContain('Continue as anna');
    const adopted = await fetch(`${sim.url}/oauth/oauth2/v1/auth`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie },
      body: new URLSearchParams({ ...Object.fromEntries(hidden), adopt: '1' }),
    });
    expect(adopted.status).toBe(302);
    const code = new URL(adopted.headers.get('location')!).searchParams.get('code')!;
    const exchange = {
      grant_type: 'authorization_code',
      client_id: 'demo-trusted-user-client',
      code,
      redirect_uri: REDIRECT,
    };
    expect((await token(exchange)).body).toMatchObject({ error: 'invalid_client' });
    const ok = await token({ ...exchange, client_secret: 'demo-trusted-secret' });
    expect(ok.status).toBe(200);
    expect((await token({ ...exchange, client_secret: 'demo-trusted-secret' })).body).toEqual({
      error: 'invalid_grant',
      error_description: 'Code already used',
    });
    const refresh = {
      grant_type: 'refresh_token',
      client_id: 'demo-trusted-user-client',
      client_secret: 'demo-trusted-secret',
      refresh_token: String(ok.body.refresh_token),
    };
    expect((await token(refresh)).status).toBe(200);
    expect(sim.logoutUser('anna')).toBe(true);
    expect((await token(refresh)).body).toMatchObject({ error: 'invalid_grant' });
    // The session is gone too: no adoption offered any more.
    expect(await (await fetch(authUrl('demo-trusted-user-client'), { headers: { cookie } })).text()).not.toContain(
      'Continue as',
    );
  },
);
