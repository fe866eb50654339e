/**
 * The login of a user-dependent service user (docs/report-export-service.md "User-dependent service user"), shared by `report-etl login` and the admin server's "Log in" link and `/oauth/callback` route:
 *
 * 1. {@link startLogin}: reads the discovery document, records a pending login with a fresh single-use `state`
 *    (10 minutes, RFC 6749 section 10.12) and returns the authorization URL (docs/report-export-service.md "User-dependent service user" step 1).
 * 2. The user logs in in a browser; the server redirects to the redirect URI with code and session_state (step 3).
 * 3. {@link completeLogin}: takes the pending login for the redirect's `state` (once: forged, replayed or expired
 *    states are refused before anything else), checks the redirect for an error (invalid_scope), exchanges the code
 *    (step 4), and stores the refresh token sealed with REPORT_ETL_SECRET_KEY, replacing the previous login and
 *    clearing LOGIN_REQUIRED. How it ended is recorded for a `report-etl login` that waits for the callback.
 *
 * Nothing here logs or returns the refresh token or the code.
 */
import type { Queryable } from '../db.ts';
import type { ConnectionConfig } from '../config/schema.ts';
import { ConfigError, coerceError } from '../errors.ts';
import { consumeLoginState, createLoginState, finishLoginState, type LoginStarter } from '../history/login-states.ts';
import { saveLogin, type ConnectionRef } from '../history/logins.ts';
import { silentLogger, type Logger } from '../logger.ts';
import {
  authorizationUrl,
  DEFAULT_RETRY,
  discoverEndpoints,
  exchangeAuthorizationCode,
  HttpTransport,
  LoginFailedError,
  readAuthorizationResponse,
  type DiscoveredEndpoints,
} from '../report-api/index.ts';
import type { SecretKey } from '../secret-box.ts';

/** Refresh token validity with offline access active (docs/report-export-service.md "Limits"): 60 days, in ms. */
export const OFFLINE_REFRESH_VALIDITY_MS = 60 * 86_400_000;
/** Refresh token validity with offline access disabled (docs/report-export-service.md "Limits"): 10 hours, in ms. */
export const ONLINE_REFRESH_VALIDITY_MS = 10 * 3_600_000;

/**
 * The longest a refresh token may live (docs/report-export-service.md "Refresh" rule 2): 60 days when offline access is active, else 10 hours.
 * the service's description ties offline access to a server setting; report-etl reads it from the granted scopes (offline_access).
 * @returns ms
 */
export function expectedRefreshValidityMs(grantedScope: string | null | undefined): number {
  return (grantedScope ?? '').split(/\s+/).includes('offline_access')
    ? OFFLINE_REFRESH_VALIDITY_MS
    : ONLINE_REFRESH_VALIDITY_MS;
}

/** The jobs.yaml connection of a login. */
export interface LoginConnection {
  /** jobs.yaml connection name. */
  name: string;
  connection: ConnectionConfig;
}

/** The key of a connection's login row. */
export function connectionRef(c: LoginConnection): ConnectionRef {
  return { connection: c.name, baseUrl: c.connection.baseUrl, clientId: c.connection.clientId };
}

function assertUserDependent(c: LoginConnection): void {
  if (c.connection.auth !== 'authorization_code' || !c.connection.redirectUri) {
    throw new ConfigError([
      `connection "${c.name}" is not a user-dependent service user (auth: ${c.connection.auth}): only connections with auth: authorization_code log in`,
    ]);
  }
}

async function endpointsOf(c: LoginConnection, logger: Logger, signal?: AbortSignal): Promise<DiscoveredEndpoints> {
  const http = new HttpTransport({ timeoutMs: c.connection.requestTimeoutMs, logger });
  try {
    return await discoverEndpoints(c.connection.baseUrl, http, DEFAULT_RETRY, signal, c.connection.tokenOrigin);
  } finally {
    await http.close();
  }
}

/** A started login. */
export interface StartedLogin {
  /** The URL to open in a browser (docs/report-export-service.md "User-dependent service user" step 1). */
  url: string;
  /** The pending login's state (a secret of the person logging in: print only inside the URL). */
  state: string;
}

/**
 * Starts a login: discovery, a pending login with a new state, the authorization URL.
 * @throws ConfigError (not a user-dependent connection); LoginFailedError (the discovery document names no
 *   authorization_endpoint); what discovery throws (ServerUnreachableError, TokenError)
 */
export async function startLogin(
  db: Queryable,
  c: LoginConnection,
  startedBy: LoginStarter,
  o: { logger?: Logger; signal?: AbortSignal } = {},
): Promise<StartedLogin> {
  assertUserDependent(c);
  const endpoints = await endpointsOf(c, o.logger ?? silentLogger, o.signal);
  if (!endpoints.authorizationEndpoint) {
    throw new LoginFailedError(
      `the discovery document of ${c.connection.baseUrl} names no authorization_endpoint (docs/report-export-service.md "Discovery document"): the server does not offer the user login`,
    );
  }
  const scopes = c.connection.scopes ?? [];
  const state = await createLoginState(db, {
    ref: connectionRef(c),
    redirectUri: c.connection.redirectUri!,
    scopes,
    startedBy,
  });
  return {
    url: authorizationUrl(endpoints.authorizationEndpoint, {
      clientId: c.connection.clientId,
      scopes,
      redirectUri: c.connection.redirectUri!,
      state,
    }),
    state,
  };
}

/** A finished login. */
export interface CompletedLogin {
  connection: string;
  /** Who started it (the callback page differs for a login started by `report-etl login`). */
  startedBy: LoginStarter;
  /** The token response's scope, when it named one. */
  grantedScope: string | undefined;
  /** When the refresh token expires at the latest (docs/report-export-service.md "Limits"). */
  expiresBy: Date;
}

/**
 * Finishes a login from the parameters the browser was redirected with (callback route or pasted URL).
 * @param findConnection the current jobs.yaml connection of a name (undefined when unknown)
 * @throws LoginFailedError: no or unknown/used/expired state (forged or replayed: RFC 6749 section 10.12), a
 *   connection that changed since the login started, an error redirect (invalid_scope: the server's
 *   error_description and what to do), a refused code; ServerUnreachableError, TransientHttpError
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
      'the redirect carries no state: it does not come from a login report-etl started; start one with `report-etl login <connection>`',
    );
  }
  const pending = await consumeLoginState(db, state);
  if (!pending) {
    logger.warn('login redirect refused: unknown, already used or expired state');
    throw new LoginFailedError(
      'this login link is unknown, was used already or expired (10 minutes; RFC 6749 section 10.12): start a new login with `report-etl login <connection>` or the admin page',
    );
  }
  try {
    const connection = findConnection(pending.connection);
    if (
      !connection ||
      connection.auth !== 'authorization_code' ||
      connection.baseUrl !== pending.base_url ||
      connection.clientId !== pending.client_id
    ) {
      throw new LoginFailedError(
        `connection "${pending.connection}" is not configured here as it was when the login started (auth: authorization_code, same baseUrl and clientId): finish it where it started, or start it again`,
      );
    }
    const c: LoginConnection = { name: pending.connection, connection };
    const endpoints = await endpointsOf(c, logger, o.signal);
    const checked = readAuthorizationResponse(endpoints, connection.clientId, params, state);
    const client = {
      clientId: connection.clientId,
      clientSecret: connection.clientSecret,
      timeoutMs: connection.requestTimeoutMs,
      retry: DEFAULT_RETRY,
    };
    const tokens = await exchangeAuthorizationCode(endpoints, client, checked, pending.redirect_uri, o.signal);
    await saveLogin(db, key, connectionRef(c), {
      refreshToken: tokens.refreshToken,
      requestedScopes: pending.scopes,
      grantedScope: tokens.scope,
    });
    const expiresBy = new Date(Date.now() + expectedRefreshValidityMs(tokens.scope));
    const message = `connection "${c.name}" logged in; scopes granted: ${tokens.scope ?? '(none named)'}; the refresh token lasts until ${expiresBy.toISOString()} at the latest`;
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
