/**
 * The login of a user-dependent service user (docs/report-export-service.md "User-dependent service user"), for
 * `report-etl login` and the admin pages: {@link startLogin} (step 1), then {@link completeLogin} with the redirect
 * (steps 3, 4). Nothing here logs or returns the refresh token or the code.
 */
import type { Queryable } from '../db.ts';
import type { ConnectionConfig } from '../config/schema.ts';
import { ConfigError, coerceError } from '../errors.ts';
import {
  codeVerifierOf,
  consumeLoginState,
  createLoginState,
  finishLoginState,
  type LoginStarter,
} from '../history/login-states.ts';
import { saveLogin } from '../history/logins.ts';
import { silentLogger, type Logger } from '../logger.ts';
import {
  authorizationUrl,
  DEFAULT_RETRY,
  discoverEndpoints,
  exchangeAuthorizationCode,
  HttpTransport,
  LoginFailedError,
  newPkce,
  readAuthorizationResponse,
  type DiscoveredEndpoints,
} from '../report-api/index.ts';
import type { SecretKey } from '../secret-box.ts';
import { formatTime } from '../time-text.ts';

/** How long a refresh token lives at most, ms (docs/report-export-service.md "Limits"): offline_access or not. */
export function expectedRefreshValidityMs(grantedScope: string | null | undefined): number {
  return (grantedScope ?? '').split(/\s+/).includes('offline_access') ? 60 * 86_400_000 : 10 * 3_600_000;
}

type LoginConnection = { name: string; connection: ConnectionConfig };

async function endpointsOf(c: LoginConnection, logger: Logger, signal?: AbortSignal): Promise<DiscoveredEndpoints> {
  const http = new HttpTransport({ timeoutMs: c.connection.requestTimeoutMs, logger });
  try {
    return await discoverEndpoints(c.connection.baseUrl, http, DEFAULT_RETRY, signal, c.connection.tokenOrigin);
  } finally {
    await http.close();
  }
}

/**
 * Starts a login: discovery, a pending login with a new state (valid 10 minutes) and, unless the connection says
 * `pkce: false` or the server offers no S256, a PKCE code verifier kept sealed with it (never logged).
 * @returns the URL to open in a browser, and the state (a secret of the person logging in)
 * @throws ConfigError (not a user-dependent connection); LoginFailedError (no authorization_endpoint); what
 *   discovery throws (ServerUnreachableError, TokenError)
 */
export async function startLogin(
  db: Queryable,
  c: LoginConnection,
  startedBy: LoginStarter,
  o: { logger?: Logger; signal?: AbortSignal } = {},
): Promise<{ url: string; state: string }> {
  const { baseUrl, clientId, redirectUri, scopes = [] } = c.connection;
  if (c.connection.auth !== 'authorization_code' || !redirectUri) {
    throw new ConfigError([
      `connection "${c.name}" is not a user-dependent service user (auth: ${c.connection.auth}): ` +
        'only connections with auth: authorization_code log in',
    ]);
  }
  const endpoints = await endpointsOf(c, o.logger ?? silentLogger, o.signal);
  if (!endpoints.authorizationEndpoint) {
    throw new LoginFailedError(
      `the discovery document of ${baseUrl} names no authorization_endpoint ` +
        '(docs/report-export-service.md "Discovery document"): the server does not offer the user login',
    );
  }
  const ref = { connection: c.name, baseUrl, clientId };
  const pkce = await newPkce(endpoints, c.connection.pkce);
  const codeVerifier = pkce?.codeVerifier;
  const state = await createLoginState(db, { ref, redirectUri, scopes, startedBy, codeVerifier });
  const codeChallenge = pkce?.codeChallenge;
  const url = authorizationUrl(endpoints.authorizationEndpoint, {
    clientId,
    scopes,
    redirectUri,
    state,
    codeChallenge,
  });
  return { url, state };
}

/** A finished login. */
export interface CompletedLogin {
  connection: string;
  /** Who started it (the callback page differs for a login started by `report-etl login`). */
  startedBy: LoginStarter;
  /** The token response's scope, when it named one. */
  grantedScope: string | undefined;
  /** When the refresh token expires at the latest. */
  expiresBy: Date;
}

/**
 * Finishes a login from the parameters of the redirect: takes the pending login of its single-use state, exchanges
 * the code, stores the refresh token sealed (clearing LOGIN_REQUIRED) and records how it ended, for a
 * `report-etl login` that waits for the callback.
 * @param findConnection the current jobs.yaml connection of a name
 * @throws LoginFailedError: no, unknown, used or expired state (RFC 6749 section 10.12), a connection that changed
 *   since the login started, an error redirect, a refused code; ServerUnreachableError, TransientHttpError
 */
export async function completeLogin(
  db: Queryable,
  key: SecretKey,
  findConnection: (name: string) => ConnectionConfig | undefined,
  params: URLSearchParams,
  o: { logger?: Logger; signal?: AbortSignal } = {},
): Promise<CompletedLogin> {
  const logger = o.logger ?? silentLogger;
  const state = params.get('state');
  if (!state) {
    throw new LoginFailedError(
      'the redirect carries no state: it does not come from a login report-etl started; ' +
        'start one with `report-etl login <connection>`',
    );
  }
  const pending = await consumeLoginState(db, state);
  if (!pending) {
    logger.warn('login redirect refused: unknown, already used or expired state');
    throw new LoginFailedError(
      'this login link is unknown, was used already or expired (10 minutes; RFC 6749 section 10.12): ' +
        'start a new login with `report-etl login <connection>` or the admin page',
    );
  }
  try {
    const connection = findConnection(pending.connection);
    if (
      connection?.auth !== 'authorization_code' ||
      connection.baseUrl !== pending.base_url ||
      connection.clientId !== pending.client_id
    ) {
      throw new LoginFailedError(
        `connection "${pending.connection}" is not configured here as it was when the login started ` +
          '(auth: authorization_code, same baseUrl and clientId): finish it where it started, or start it again',
      );
    }
    const c: LoginConnection = { name: pending.connection, connection };
    const endpoints = await endpointsOf(c, logger, o.signal);
    const checked = readAuthorizationResponse(endpoints, connection.clientId, params, state);
    const { clientId, clientSecret, requestTimeoutMs: timeoutMs } = connection;
    const client = { clientId, clientSecret, timeoutMs, retry: DEFAULT_RETRY };
    const verifier = codeVerifierOf(pending, state);
    const tokens = await exchangeAuthorizationCode(
      endpoints,
      client,
      checked,
      pending.redirect_uri,
      verifier,
      o.signal,
    );
    const login = { refreshToken: tokens.refreshToken, requestedScopes: pending.scopes, grantedScope: tokens.scope };
    await saveLogin(db, key, { connection: c.name, baseUrl: connection.baseUrl, clientId }, login);
    const expiresBy = new Date(Date.now() + expectedRefreshValidityMs(tokens.scope));
    const message =
      `connection "${c.name}" logged in; scopes granted: ${tokens.scope ?? '(none named)'}; ` +
      `the refresh token lasts until ${formatTime(expiresBy, connection.timezone)} at the latest`;
    await finishLoginState(db, state, 'logged_in', message);
    logger.info(
      { connection: c.name, scope: tokens.scope, startedBy: pending.started_by },
      'user-dependent service user logged in',
    );
    return { connection: c.name, startedBy: pending.started_by, grantedScope: tokens.scope, expiresBy };
  } catch (err) {
    await finishLoginState(db, state, 'failed', coerceError(err).message).catch(() => undefined);
    logger.warn({ connection: pending.connection, err: coerceError(err).message }, 'login failed');
    throw err;
  }
}
