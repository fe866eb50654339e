/**
 * The OAuth parts of a user-dependent service user (docs/report-export-service.md "User-dependent service user",
 * "Refresh") on oauth4webapi: the authorization URL, the redirect's checks, the authorization-code and refresh grants.
 * `state` guards against CSRF (RFC 6749 section 10.12); PKCE (RFC 7636, S256), which a server that does not know it
 * ignores, is sent unless the connection says `pkce: false` or discovery offers other methods only. oauth4webapi
 * errors may carry the token response as their cause: every error leaving this module is ours, secrets scrubbed.
 */
import * as oauth from 'oauth4webapi';
import { AbortedError } from '../errors.ts';
import type { DiscoveredEndpoints } from './discovery.ts';
import {
  LoginFailedError,
  LoginRequiredError,
  ServerUnreachableError,
  TokenError,
  TransientHttpError,
} from './errors.ts';
import { boundText, redactor } from '../failure-text.ts';
import { credentialSecrets, retryTransient, TRANSIENT_STATUSES, unreachableCode, type RetryPolicy } from './http.ts';
import { checkedAccessToken, MAX_TOKEN_ANSWER_BYTES, type IssuedToken } from './token-request.ts';

/** What the grants need of the connection: `clientSecret` only of a trusted client; `timeoutMs` per request. */
interface UserClient {
  clientId: string;
  clientSecret?: string | undefined;
  timeoutMs: number;
  retry: RetryPolicy;
}

/** A login's PKCE pair (RFC 7636): the verifier stays with the pending login, the challenge goes to the browser. */
export interface Pkce {
  /** 43 characters of base64url from 32 random bytes; a secret until the code is exchanged. */
  codeVerifier: string;
  /** base64url(SHA-256(codeVerifier)), sent with code_challenge_method=S256. */
  codeChallenge: string;
}

/** A new PKCE pair for a login, or undefined when the connection or the discovery document rules it out. */
export async function newPkce(endpoints: DiscoveredEndpoints, wanted: boolean): Promise<Pkce | undefined> {
  if (!wanted || (endpoints.codeChallengeMethods && !endpoints.codeChallengeMethods.includes('S256'))) return undefined;
  const codeVerifier = oauth.generateRandomCodeVerifier();
  return { codeVerifier, codeChallenge: await oauth.calculatePKCECodeChallenge(codeVerifier) };
}

/**
 * The URL to open in a browser (step 1): response_type=code, client_id, scope, redirect_uri, the single-use `state`
 * and, with a PKCE `codeChallenge`, code_challenge and code_challenge_method=S256.
 */
export function authorizationUrl(
  authorizationEndpoint: string,
  r: { clientId: string; scopes: readonly string[]; redirectUri: string; state: string; codeChallenge?: string },
): string {
  const url = new URL(authorizationEndpoint);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', r.clientId);
  url.searchParams.set('scope', r.scopes.join(' '));
  url.searchParams.set('redirect_uri', r.redirectUri);
  url.searchParams.set('state', r.state);
  if (r.codeChallenge !== undefined) {
    url.searchParams.set('code_challenge', r.codeChallenge);
    url.searchParams.set('code_challenge_method', 'S256');
  }
  // URLSearchParams writes a space as '+'; the service asks for URL-encoding: %20, which every server reads.
  return url.toString().replace(/\+/g, '%20');
}

function server(endpoints: DiscoveredEndpoints): oauth.AuthorizationServer {
  return {
    issuer: endpoints.issuer,
    token_endpoint: endpoints.tokenEndpoint,
    ...(endpoints.authorizationEndpoint ? { authorization_endpoint: endpoints.authorizationEndpoint } : {}),
  };
}

/** What to tell the user for an authorization error (docs/report-export-service.md "Errors" for invalid_scope). */
function authorizationAdvice(error: string, description: string | undefined): string {
  if (error === 'invalid_scope') {
    return /too many/i.test(description ?? '')
      ? 'request at most 25 scopes (jobs.yaml `scopes`)'
      : 'assign the requested scopes to the user in the standard user management (and to the service user in the ' +
          'API user management; from product version 2026 to the user category too), or request fewer scopes';
  }
  if (error === 'access_denied') return 'the user refused or may not use this service user; log in as a user who may';
  return 'check the service user (Client-ID, redirect URI) in the API user management';
}

/**
 * Checks the redirect's parameters (step 3): `state` must be `expectedState`; an `error` ends the login.
 * @returns the parameters, for {@link exchangeAuthorizationCode}
 * @throws LoginFailedError with the server's error_description (`serverMessage`) and what to do
 */
export function readAuthorizationResponse(
  endpoints: DiscoveredEndpoints,
  clientId: string,
  params: URLSearchParams,
  expectedState: string,
): URLSearchParams {
  try {
    return oauth.validateAuthResponse(server(endpoints), { client_id: clientId }, params, expectedState);
  } catch (err) {
    if (err instanceof oauth.AuthorizationResponseError) {
      const description = err.error_description;
      const said = `${err.error}${described(description)}`;
      throw new LoginFailedError(
        `the server refused the login: ${said}; ${authorizationAdvice(err.error, description)}`,
        {
          oauthError: err.error,
          ...(description !== undefined ? { serverMessage: description } : {}),
        },
      );
    }
    throw new LoginFailedError(`the redirect's parameters are not usable: ${(err as Error).message}`);
  }
}

/** The body of `res`, at most {@link MAX_TOKEN_ANSWER_BYTES}. @throws TokenError when it has more */
async function boundedBody(res: Response, path: string): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body ?? []) {
    size += chunk.length;
    if (size > MAX_TOKEN_ANSWER_BYTES) {
      await res.body?.cancel().catch(() => undefined);
      throw new TokenError(
        `token endpoint ${path} answered ${res.status} with more than ${MAX_TOKEN_ANSWER_BYTES} bytes, ` +
          'not read further',
        { httpStatus: res.status },
      );
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** fetch for oauth4webapi: failures classified as http.ts does, a timeout, at most MAX_TOKEN_ANSWER_BYTES read. */
function classifyingFetch(timeoutMs: number, signal: AbortSignal | undefined): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = String(input instanceof Request ? input.url : input);
    const path = new URL(url).pathname;
    const timeout = AbortSignal.timeout(timeoutMs);
    let res: Response;
    try {
      res = await fetch(input, { ...init, signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
    } catch (err) {
      if (signal?.aborted) throw new AbortedError(signal.reason);
      const code = unreachableCode(err);
      if (code !== undefined) throw new ServerUnreachableError('POST', url, 'token', code);
      const what = timeout.aborted
        ? 'timed out'
        : ((err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name);
      throw new TransientHttpError(`POST ${path} failed: ${what}`, { stage: 'token' });
    }
    if (TRANSIENT_STATUSES.has(res.status)) {
      // A token endpoint's error page may echo the form it got: never quote it.
      await res.body?.cancel().catch(() => undefined);
      throw new TransientHttpError(`POST ${path} answered ${res.status}`, { stage: 'token', httpStatus: res.status });
    }
    const body = await boundedBody(res, path);
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  }) as typeof fetch;
}

/** The oauth4webapi arguments every token request starts with. */
function grant(endpoints: DiscoveredEndpoints, c: UserClient, signal: AbortSignal | undefined) {
  const opts: oauth.TokenEndpointRequestOptions = {
    [oauth.customFetch]: classifyingFetch(c.timeoutMs, signal),
    ...(new URL(endpoints.tokenEndpoint).protocol === 'http:' ? { [oauth.allowInsecureRequests]: true } : {}),
  };
  const auth = c.clientSecret ? oauth.ClientSecretPost(c.clientSecret) : oauth.None();
  return { head: [server(endpoints), { client_id: c.clientId }, auth] as const, opts };
}

/** The OAuth error fields of an oauth4webapi error, `secrets` redacted; never its cause (it may hold tokens). */
function refusal(err: unknown, secrets: string[]) {
  const e = err as { status?: unknown; error?: unknown; error_description?: unknown; response?: { status?: unknown } };
  if (
    !(err instanceof oauth.ResponseBodyError) &&
    !(err instanceof oauth.WWWAuthenticateChallengeError) &&
    !(err instanceof oauth.OperationProcessingError && typeof e.response?.status === 'number')
  )
    return undefined;
  const redact = redactor(secrets);
  const status = typeof e.status === 'number' ? e.status : (e.response?.status as number | undefined);
  const error = typeof e.error === 'string' ? boundText(redact(e.error), 100) : undefined;
  const description = typeof e.error_description === 'string' ? redact(e.error_description) : undefined;
  return {
    status,
    error,
    description,
    /** ` with 400: invalid_grant (description)`, as far as known. */
    said: `${status ? ` with ${status}` : ''}${error ? `: ${error}` : ''}${described(description)}`,
    options: { ...(status ? { httpStatus: status } : {}), ...(error ? { oauthError: error } : {}) },
  };
}

const described = (description: string | undefined) => (description ? ` (${description})` : '');

function isOurs(err: unknown): boolean {
  return err instanceof TransientHttpError || err instanceof ServerUnreachableError || err instanceof AbortedError;
}

function issued(r: oauth.TokenEndpointResponse, path: string, secrets: string[]): IssuedToken {
  if (typeof r.expires_in !== 'number' || !(r.expires_in > 0)) {
    throw new TokenError(`token endpoint ${path} answered 200 without a usable expires_in`, { httpStatus: 200 });
  }
  return {
    accessToken: checkedAccessToken(r.access_token, path),
    expiresInSeconds: r.expires_in,
    ...(typeof r.scope === 'string' ? { scope: boundText(redactor(secrets)(r.scope)) } : {}),
  };
}

/**
 * The authorization-code grant (step 4), with `code_verifier` when the login sent a PKCE challenge; transient
 * failures are retried per `c.retry`.
 * @param params the redirect's parameters as {@link readAuthorizationResponse} returned them
 * @param codeVerifier the login's PKCE code verifier (never logged, redacted from every error), or undefined
 * @returns the access token, its lifetime in s, the scope and the refresh token (step 5)
 * @throws LoginFailedError (refused, e.g. invalid_grant for a used or expired code; no refresh_token);
 *   ServerUnreachableError; TransientHttpError (attempts exhausted); AbortedError
 */
export async function exchangeAuthorizationCode(
  endpoints: DiscoveredEndpoints,
  c: UserClient,
  params: URLSearchParams,
  redirectUri: string,
  codeVerifier: string | undefined,
  signal?: AbortSignal,
): Promise<IssuedToken & { refreshToken: string }> {
  const path = new URL(endpoints.tokenEndpoint).pathname;
  const code = params.get('code') ?? '';
  const secrets = [code, ...(codeVerifier ? [codeVerifier] : []), ...credentialSecrets(c.clientId, c.clientSecret)];
  try {
    return await retryTransient(
      async () => {
        const { head, opts } = grant(endpoints, c, signal);
        const verifier = codeVerifier ?? oauth.nopkce;
        const res = await oauth.authorizationCodeGrantRequest(...head, params, redirectUri, verifier, opts);
        const r = await oauth.processAuthorizationCodeResponse(head[0], head[1], res);
        if (typeof r.refresh_token !== 'string' || r.refresh_token === '') {
          throw new LoginFailedError(
            `token endpoint ${path} answered the code without a refresh_token (docs/report-export-service.md ` +
              '"User-dependent service user" step 5 promises one): check that the service user is user-dependent',
            { httpStatus: 200 },
          );
        }
        return { ...issued(r, path, secrets), refreshToken: r.refresh_token };
      },
      c.retry,
      signal,
    );
  } catch (err) {
    if (isOurs(err) || err instanceof LoginFailedError) throw err;
    if (err instanceof TokenError) throw new LoginFailedError(err.message, { httpStatus: 200 });
    const r = refusal(err, secrets);
    if (r) {
      throw new LoginFailedError(
        `token endpoint ${path} refused the authorization code for client "${c.clientId}"${r.said}; start the ` +
          'login again (a code is single use and short-lived)' +
          (codeVerifier
            ? '; the login used PKCE (S256): should the server refuse it every time, set pkce: false on the ' +
              'connection in jobs.yaml'
            : ''),
        r.options,
      );
    }
    throw new LoginFailedError(
      `token endpoint ${path} gave an unusable answer to the authorization code: ${(err as Error).message}`,
    );
  }
}

/**
 * The refresh grant (docs/report-export-service.md "Refresh"; no new refresh token comes back); transient failures
 * are retried.
 * @param connection jobs.yaml name, for the LOGIN_REQUIRED message
 * @returns the access token, its lifetime in s and its scope
 * @throws LoginRequiredError when the server refuses the refresh token (invalid_grant, or 401: "Refresh" rules 2-5);
 *   TokenError for any other refusal; ServerUnreachableError; TransientHttpError; AbortedError
 */
export async function refreshAccessToken(
  endpoints: DiscoveredEndpoints,
  c: UserClient,
  connection: string,
  refreshToken: string,
  signal?: AbortSignal,
): Promise<IssuedToken> {
  const path = new URL(endpoints.tokenEndpoint).pathname;
  const secrets = [refreshToken, ...credentialSecrets(c.clientId, c.clientSecret)];
  try {
    return await retryTransient(
      async () => {
        const { head, opts } = grant(endpoints, c, signal);
        const res = await oauth.refreshTokenGrantRequest(...head, refreshToken, opts);
        const r = await oauth.processRefreshTokenResponse(head[0], head[1], res);
        return issued(r, path, secrets);
      },
      c.retry,
      signal,
    );
  } catch (err) {
    if (isOurs(err) || err instanceof TokenError) throw err;
    const r = refusal(err, secrets);
    if (r && (r.error === 'invalid_grant' || r.status === 401)) {
      const reason = `the server refused the refresh token: ${r.error ?? r.status}${described(r.description)}`;
      throw new LoginRequiredError(connection, reason, r.options);
    }
    if (r) {
      const msg = `token endpoint ${path} refused the refresh grant for client "${c.clientId}"${r.said}`;
      throw new TokenError(msg, r.options);
    }
    throw new TokenError(
      `token endpoint ${path} gave an unusable answer to the refresh grant: ${(err as Error).message}`,
      { httpStatus: 200 },
    );
  }
}
