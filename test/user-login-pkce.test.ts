/**
 * PKCE (RFC 7636, S256) in the login of a user-dependent service user
 * (docs/report-export-service.md "User-dependent service user"): the authorization URL carries the challenge, the
 * pending login keeps the verifier sealed, the code grant sends it, and a simulator that knows PKCE refuses a code
 * without its verifier or with a wrong one. A server that ignores PKCE still logs in, and `pkce: false` or a discovery
 * document without S256 sends none. Real PostgreSQL, the simulator over HTTP; the verifier appears in no log line.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EtlConfig } from '../src/config/schema.ts';
import { codeVerifierOf, getLoginState } from '../src/history/login-states.ts';
import { completeLogin, startLogin } from '../src/login/login-flow.ts';
import {
  DEFAULT_RETRY,
  exchangeAuthorizationCode,
  LoginFailedError,
  newPkce,
  readAuthorizationResponse,
} from '../src/report-api/index.ts';
import type { DiscoveredEndpoints } from '../src/report-api/index.ts';
import { secretKeyFromEnv, SECRET_KEY_ENV } from '../src/secret-box.ts';
import { startHarness, type Harness } from './support/harness.ts';
import { captureAll, loginOnSimulator } from './support/user-login.ts';

const previousKey = process.env[SECRET_KEY_ENV];
const log = captureAll();
let h: Harness;
/** A second simulator that knows no PKCE: it ignores code_challenge and code_verifier. */
let plain: Harness;

const userConnection = (sim: Harness, extra: Record<string, unknown> = {}): EtlConfig =>
  sim.config(
    {},
    {
      auth: 'authorization_code',
      clientId: 'demo-user-client',
      clientSecret: undefined,
      scopes: ['svc.pad', 'offline_access'],
      redirectUri: 'https://etl.example.com/oauth/callback',
      ...extra,
    },
  );

beforeAll(async () => {
  process.env[SECRET_KEY_ENV] = randomBytes(32).toString('hex');
  h = await startHarness();
  plain = await startHarness({ pkce: false });
});

afterAll(async () => {
  for (const sim of [h, plain]) {
    await sim?.pool.query('DELETE FROM etl.connection_logins WHERE base_url = $1', [sim.sim.url]);
    await sim?.pool.query('DELETE FROM etl.login_states WHERE base_url = $1', [sim.sim.url]);
    await sim?.close();
  }
  if (previousKey === undefined) delete process.env[SECRET_KEY_ENV];
  else process.env[SECRET_KEY_ENV] = previousKey;
});

/** Starts a login on `sim` and logs anna in; @returns the start, the redirect's parameters and the config. */
async function login(sim: Harness, extra: Record<string, unknown> = {}) {
  const config = userConnection(sim, extra);
  const started = await startLogin(sim.pool, { name: 'sim', connection: config.connections.sim! }, 'cli', {
    logger: log.logger,
  });
  const redirect = await loginOnSimulator(started.url, 'anna', 'anna-password');
  return { started, params: new URL(redirect).searchParams, config };
}

const base64url = (s: string) => createHash('sha256').update(s).digest('base64url');

describe('a server that knows PKCE', () => {
  it('gets an S256 challenge, the verifier with the code, and logs the user in', async () => {
    const before = h.sim.oauthCounters().pkce;
    const { started, params, config } = await login(h);
    const url = new URL(started.url);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    const challenge = url.searchParams.get('code_challenge')!;
    expect(challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const row = (await getLoginState(h.pool, started.state))!;
    const verifier = codeVerifierOf(row, started.state)!;
    expect(base64url(verifier)).toBe(challenge);
    // Sealed: the row holds neither the verifier nor anything that opens without the state.
    expect(row.code_verifier_sealed).toMatch(/^v1:/);
    expect(JSON.stringify(row)).not.toContain(verifier);
    expect(() => codeVerifierOf(row, randomBytes(32).toString('base64url'))).toThrow(/could not be decrypted/);

    const done = await completeLogin(h.pool, secretKeyFromEnv(), (n) => config.connections[n], params, {
      logger: log.logger,
    });
    expect(done.grantedScope).toBe('svc.pad offline_access');
    const after = h.sim.oauthCounters().pkce;
    expect(after.challenged.S256).toBe(before.challenged.S256 + 1);
    expect(after.verified).toBe(before.verified + 1);
    expect(after.refused).toBe(before.refused);
    expect(log.text()).not.toContain(verifier);
  });

  it('refuses the code to a thief without the verifier, or with a wrong one', async () => {
    for (const stolen of [undefined, randomBytes(32).toString('base64url')]) {
      const { params, started } = await login(h);
      const refusedBefore = h.sim.oauthCounters().pkce.refused;
      const endpoints: DiscoveredEndpoints = {
        issuer: `${h.sim.url}/oauth/oauth2/v1`,
        tokenEndpoint: `${h.sim.url}/oauth/oauth2/v1/token`,
        authorizationEndpoint: undefined,
        codeChallengeMethods: undefined,
      };
      const client = { clientId: 'demo-user-client', timeoutMs: 10_000, retry: DEFAULT_RETRY };
      const redirectUri = 'https://etl.example.com/oauth/callback';
      const checked = readAuthorizationResponse(endpoints, client.clientId, params, started.state);
      const err = await exchangeAuthorizationCode(endpoints, client, checked, redirectUri, stolen).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(LoginFailedError);
      expect((err as Error).message).toContain(
        stolen === undefined ? 'invalid_grant (Missing code_verifier)' : 'invalid_grant (PKCE verification failed)',
      );
      if (stolen !== undefined) expect((err as Error).message).toContain('set pkce: false on the connection');
      expect(h.sim.oauthCounters().pkce.refused).toBe(refusedBefore + 1);
      // The thief's try used the code up: the login it came from cannot finish with it either.
      const config = userConnection(h);
      await expect(completeLogin(h.pool, secretKeyFromEnv(), (n) => config.connections[n], params)).rejects.toThrow(
        /Code already used/,
      );
      expect((await getLoginState(h.pool, started.state))!.outcome).toBe('failed');
    }
  });

  it('refuses a malformed challenge or an unknown method with invalid_request', async () => {
    for (const [challenge, method] of [
      ['short', 'S256'],
      ['a'.repeat(43), 'S512'],
    ] as const) {
      const url = new URL(`${h.sim.url}/oauth/oauth2/v1/auth`);
      url.search = new URLSearchParams({
        response_type: 'code',
        client_id: 'demo-user-client',
        scope: 'svc.pad',
        redirect_uri: 'https://etl.example.com/oauth/callback',
        state: 's',
        code_challenge: challenge,
        code_challenge_method: method,
      }).toString();
      const res = await fetch(url, { redirect: 'manual' });
      expect(res.status).toBe(302);
      const back = new URL(res.headers.get('location')!).searchParams;
      expect(back.get('error')).toBe('invalid_request');
      expect(back.get('state')).toBe('s');
    }
  });

  it('pkce: false sends no challenge and keeps no verifier; the login works', async () => {
    const before = h.sim.oauthCounters().pkce;
    const { started, params, config } = await login(h, { pkce: false });
    expect(new URL(started.url).searchParams.has('code_challenge')).toBe(false);
    expect(new URL(started.url).searchParams.has('code_challenge_method')).toBe(false);
    expect((await getLoginState(h.pool, started.state))!.code_verifier_sealed).toBeNull();
    await completeLogin(h.pool, secretKeyFromEnv(), (n) => config.connections[n], params);
    expect(h.sim.oauthCounters().pkce).toEqual(before);
  });
});

it('a server that ignores PKCE logs the user in all the same', async () => {
  const { started, params, config } = await login(plain);
  expect(new URL(started.url).searchParams.get('code_challenge_method')).toBe('S256');
  const done = await completeLogin(plain.pool, secretKeyFromEnv(), (n) => config.connections[n], params);
  expect(done.connection).toBe('sim');
  expect(plain.sim.oauthCounters().pkce).toEqual({ challenged: { S256: 0, plain: 0 }, verified: 0, refused: 0 });
  expect(plain.sim.oauthCounters().grants.authorization_code).toBe(1);
});

it('sends no PKCE to a server whose discovery document offers other methods only', async () => {
  const endpoints = (methods: string[] | undefined): DiscoveredEndpoints => ({
    issuer: 'https://erp.example.com',
    tokenEndpoint: 'https://erp.example.com/token',
    authorizationEndpoint: 'https://erp.example.com/auth',
    codeChallengeMethods: methods,
  });
  expect(await newPkce(endpoints(['plain']), true)).toBeUndefined();
  expect(await newPkce(endpoints([]), true)).toBeUndefined();
  expect(await newPkce(endpoints(['S256']), false)).toBeUndefined();
  for (const methods of [undefined, ['plain', 'S256']]) {
    const pkce = (await newPkce(endpoints(methods), true))!;
    expect(pkce.codeVerifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(pkce.codeChallenge).toBe(base64url(pkce.codeVerifier));
  }
});
