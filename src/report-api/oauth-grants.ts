/**
 * The OAuth parts of a user-dependent service user (docs/report-export-service.md "User-dependent service user",
 * "Endpoints" #6 and #7, "Token response"), on oauth4webapi (a small, well-kept, dependency-free OAuth 2 client):
 * the authorization request URL, the checks of the redirect's parameters (state, error), the authorization-code
 * grant and the refresh grant. The token endpoint is the one of the discovery document.
 *
 * Choices: no PKCE (the service's authorization request names response_type, client_id, scope and redirect_uri only;
 * `state` is added for CSRF protection, RFC 6749 section 10.12); the client authenticates with client_secret in the
 * body only when it is a trusted client (docs/report-export-service.md "User-dependent service user" step 4), else sends client_id alone. oauth4webapi errors can carry the
 * token response (refresh token included) as their cause: every error leaving this module is one of ours, built from
 * the OAuth error fields, with the refresh token and code scrubbed from the server's description.
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

/** What the grants need of the connection. */
export interface UserClient {
  clientId: string;
  /** Only for a trusted (confidential) client (docs/report-export-service.md "User-dependent service user" step 4). */
  clientSecret?: string | undefined;
  /** Timeout of one request to the token endpoint, ms. */
  timeoutMs: number;
  retry: RetryPolicy;
}

/** The token response of the authorization-code grant (docs/report-export-service.md "User-dependent service user" step 5: including scope and refresh_token). */
export interface UserTokenResponse extends IssuedToken {
  refreshToken: string;
}

/** What the authorization request carries (docs/report-export-service.md "User-dependent service user" step 1). */
export interface AuthorizationRequest {
  clientId: string;
  /** Scope names; joined with a space (docs/report-export-service.md: at most 25). */
  scopes: readonly string[];
  redirectUri: string;
  /** The single-use CSRF value the redirect must bring back (RFC 6749 section 10.12). */
  state: string;
}

/**
 * The URL to open in a browser (docs/report-export-service.md "User-dependent service user" step 1): response_type=code, client_id, scope (space-separated), redirect_uri
 * and state, every value URL-encoded.
 */
export function authorizationUrl(authorizationEndpoint: string, r: AuthorizationRequest): string {
  const url = new URL(authorizationEndpoint);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', r.clientId);
  url.searchParams.set('scope', r.scopes.join(' '));
  url.searchParams.set('redirect_uri', r.redirectUri);
  url.searchParams.set('state', r.state);
  // URLSearchParams writes a space as '+'; the service's description says URL-encoded, so write %20, which every server reads.
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
      : 'assign the requested scopes to the user in the standard user management (and to the service user in the API user management; from product version 2026 to the user category too), or request fewer scopes';
  }
  if (error === 'access_denied') return 'the user refused or may not use this service user; log in as a user who may';
  return 'check the service user (Client-ID, redirect URI) in the API user management';
}

/**
 * Checks the parameters the browser was redirected with (docs/report-export-service.md "User-dependent service user" step 3): `state` must be `expectedState`, and an
 * `error` (docs/report-export-service.md "Errors": invalid_scope) ends the login.
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
      throw new LoginFailedError(
        `the server refused the login: ${err.error}${description ? ` (${description})` : ''}; ${authorizationAdvice(err.error, description)}`,
        { oauthError: err.error, ...(description !== undefined ? { serverMessage: description } : {}) },
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

/**
 * fetch for oauth4webapi that classifies failures as the rest of the client does, honours a timeout and reads at most
 * {@link MAX_TOKEN_ANSWER_BYTES} of an answer.
 */
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

function options(
  endpoints: DiscoveredEndpoints,
  c: UserClient,
  signal: AbortSignal | undefined,
): oauth.TokenEndpointRequestOptions {
  return {
    [oauth.customFetch]: classifyingFetch(c.timeoutMs, signal),
    ...(new URL(endpoints.tokenEndpoint).protocol === 'http:' ? { [oauth.allowInsecureRequests]: true } : {}),
  };
}

function clientAuth(c: UserClient): oauth.ClientAuth {
  return c.clientSecret ? oauth.ClientSecretPost(c.clientSecret) : oauth.None();
}

/**
 * The OAuth error fields of an oauth4webapi error, without any form of `secrets` (failure-text.ts redactor); never its
 * cause (which may hold tokens).
 */
function refusal(
  err: unknown,
  secrets: string[],
): { status: number | undefined; error: string | undefined; description: string | undefined } | undefined {
  const e = err as { status?: unknown; error?: unknown; error_description?: unknown; response?: { status?: unknown } };
  if (
    err instanceof oauth.ResponseBodyError ||
    err instanceof oauth.WWWAuthenticateChallengeError ||
    (err instanceof oauth.OperationProcessingError && typeof e.response?.status === 'number')
  ) {
    const redact = redactor(secrets);
    return {
      status: typeof e.status === 'number' ? e.status : (e.response?.status as number | undefined),
      error: typeof e.error === 'string' ? boundText(redact(e.error), 100) : undefined,
      description: typeof e.error_description === 'string' ? redact(e.error_description) : undefined,
    };
  }
  return undefined;
}

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
 * The authorization-code grant (docs/report-export-service.md "User-dependent service user" step 4): POST grant_type=authorization_code, client_id, code, redirect_uri,
 * and client_secret only for a trusted client. Transient failures are retried per `c.retry`.
 * @param params the redirect's parameters as {@link readAuthorizationResponse} returned them
 * @returns the access token, its lifetime, the scope and the refresh token (docs/report-export-service.md "User-dependent service user" step 5)
 * @throws LoginFailedError (refused, e.g. invalid_grant for a used or expired code; or no refresh_token in the
 *   answer); ServerUnreachableError; TransientHttpError (attempts exhausted); AbortedError
 */
export async function exchangeAuthorizationCode(
  endpoints: DiscoveredEndpoints,
  c: UserClient,
  params: URLSearchParams,
  redirectUri: string,
  signal?: AbortSignal,
): Promise<UserTokenResponse> {
  const path = new URL(endpoints.tokenEndpoint).pathname;
  const code = params.get('code') ?? '';
  const secrets = [code, ...credentialSecrets(c.clientId, c.clientSecret)];
  try {
    return await retryTransient(
      async () => {
        const res = await oauth.authorizationCodeGrantRequest(
          server(endpoints),
          { client_id: c.clientId },
          clientAuth(c),
          params,
          redirectUri,
          oauth.nopkce,
          options(endpoints, c, signal),
        );
        const r = await oauth.processAuthorizationCodeResponse(server(endpoints), { client_id: c.clientId }, res);
        if (typeof r.refresh_token !== 'string' || r.refresh_token === '') {
          throw new LoginFailedError(
            `token endpoint ${path} answered the code without a refresh_token (docs/report-export-service.md "User-dependent service user" step 5 promises one): check that the service user is user-dependent`,
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
        `token endpoint ${path} refused the authorization code for client "${c.clientId}"${r.status ? ` with ${r.status}` : ''}${r.error ? `: ${r.error}` : ''}${r.description ? ` (${r.description})` : ''}; start the login again (a code is single use and short-lived)`,
        { ...(r.error ? { oauthError: r.error } : {}), ...(r.status ? { httpStatus: r.status } : {}) },
      );
    }
    throw new LoginFailedError(
      `token endpoint ${path} gave an unusable answer to the authorization code: ${(err as Error).message}`,
    );
  }
}

/**
 * The refresh grant (docs/report-export-service.md "Refresh"): POST grant_type=refresh_token, client_id, refresh_token (and client_secret for
 * a trusted client). The answer carries no new refresh token (docs/report-export-service.md "Refresh" rule 1). Transient failures are retried.
 * @param connection jobs.yaml name, for the LOGIN_REQUIRED message
 * @returns the access token, its lifetime in s and its scope
 * @throws LoginRequiredError when the server refuses the refresh token (400 invalid_grant, or 401: expired, user
 *   logged out, regenerated by another client; docs/report-export-service.md "Refresh" rules 2-5); TokenError for any other refusal;
 *   ServerUnreachableError; TransientHttpError (attempts exhausted); AbortedError
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
        const res = await oauth.refreshTokenGrantRequest(
          server(endpoints),
          { client_id: c.clientId },
          clientAuth(c),
          refreshToken,
          options(endpoints, c, signal),
        );
        const r = await oauth.processRefreshTokenResponse(server(endpoints), { client_id: c.clientId }, res);
        return issued(r, path, secrets);
      },
      c.retry,
      signal,
    );
  } catch (err) {
    if (isOurs(err) || err instanceof TokenError) throw err;
    const r = refusal(err, secrets);
    if (r && (r.error === 'invalid_grant' || r.status === 401)) {
      const reason = `the server refused the refresh token: ${r.error ?? r.status}${r.description ? ` (${r.description})` : ''}`;
      throw new LoginRequiredError(connection, reason, {
        ...(r.status ? { httpStatus: r.status } : {}),
        ...(r.error ? { oauthError: r.error } : {}),
      });
    }
    if (r) {
      throw new TokenError(
        `token endpoint ${path} refused the refresh grant for client "${c.clientId}"${r.status ? ` with ${r.status}` : ''}${r.error ? `: ${r.error}` : ''}${r.description ? ` (${r.description})` : ''}`,
        {
          ...(r.status ? { httpStatus: r.status } : {}),
          ...(r.error ? { oauthError: r.error } : {}),
        },
      );
    }
    throw new TokenError(
      `token endpoint ${path} gave an unusable answer to the refresh grant: ${(err as Error).message}`,
      { httpStatus: 200 },
    );
  }
}
