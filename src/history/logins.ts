/**
 * etl.connection_logins: a user-dependent service user's refresh token, sealed (secret-box.ts) and never read by
 * the listings; its login and scopes; the latest token's scope (either kind); and whether runs need a new login.
 */
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db.ts';
import type { ConnectionAuthStore, LoginState } from '../report-api/types.ts';
import type { AuthKind } from '../report-api/report-rules.ts';
import { open, seal, SECRET_KEY_ENV, type SecretKey } from '../secret-box.ts';

/** The table's key: jobs.yaml connection name, base URL and Client-ID. */
export interface ConnectionRef {
  connection: string;
  baseUrl: string;
  clientId: string;
}

/** What a refresh token is sealed with, so that it opens for its own row only. */
function aad(ref: ConnectionRef): string {
  return `report-etl refresh token\n${ref.connection}\n${ref.baseUrl}\n${ref.clientId}`;
}

/** What a successful login stores. */
export interface NewLogin {
  refreshToken: string;
  requestedScopes: readonly string[];
  /** The token response's scope. */
  grantedScope: string | undefined;
}

/**
 * Stores a new login, replacing the previous one (docs/report-export-service.md "Refresh" rule 3), and clears
 * LOGIN_REQUIRED.
 * @returns the new login id (a UUID)
 */
export async function saveLogin(db: Queryable, key: SecretKey, ref: ConnectionRef, login: NewLogin): Promise<string> {
  const loginId = randomUUID();
  await db.query(
    `INSERT INTO etl.connection_logins (connection, base_url, client_id, auth, login_id, refresh_token_sealed, key_id,
                                        logged_in_at, requested_scopes, granted_scope, scope_seen_at,
                                        login_required_at, login_required_reason, updated_at)
     VALUES ($1, $2, $3, 'authorization_code', $4, $5, $6, now(), $7, $8, now(), NULL, NULL, now())
     ON CONFLICT (connection, base_url, client_id) DO UPDATE SET
       auth = 'authorization_code', login_id = $4, refresh_token_sealed = $5, key_id = $6, logged_in_at = now(),
       requested_scopes = $7, granted_scope = $8, scope_seen_at = now(), login_required_at = NULL,
       login_required_reason = NULL, updated_at = now()`,
    [
      ref.connection,
      ref.baseUrl,
      ref.clientId,
      loginId,
      seal(key, login.refreshToken, aad(ref)),
      key.id,
      [...login.requestedScopes],
      login.grantedScope ?? null,
    ],
  );
  return loginId;
}

/** Where a connection stands, with the refresh token opened; one sealed with another key counts as none. */
async function readLoginState(db: Queryable, key: SecretKey, ref: ConnectionRef): Promise<LoginState> {
  const { rows } = await db.query<{
    login_id: string | null;
    refresh_token_sealed: string | null;
    key_id: string | null;
    login_required_at: Date | null;
    login_required_reason: string | null;
  }>(
    `SELECT login_id, refresh_token_sealed, key_id, login_required_at, login_required_reason
       FROM etl.connection_logins WHERE connection = $1 AND base_url = $2 AND client_id = $3`,
    [ref.connection, ref.baseUrl, ref.clientId],
  );
  const row = rows[0];
  if (!row || row.login_id === null || row.refresh_token_sealed === null)
    return { kind: 'login_required', reason: 'nobody has logged in for this connection yet' };
  if (row.login_required_at !== null)
    return { kind: 'login_required', reason: row.login_required_reason ?? 'the refresh token was refused' };
  if (row.key_id !== key.id)
    return { kind: 'login_required', reason: `the login was stored with another ${SECRET_KEY_ENV}` };
  return {
    kind: 'logged_in',
    login: { loginId: row.login_id, refreshToken: open(key, row.refresh_token_sealed, aad(ref)) },
  };
}

/**
 * Records that login `loginId`'s refresh token was refused; a newer login is left alone.
 * @returns whether the row changed
 */
export async function markLoginRequired(
  db: Queryable,
  ref: ConnectionRef,
  loginId: string,
  reason: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE etl.connection_logins SET login_required_at = now(), login_required_reason = $5, updated_at = now()
      WHERE connection = $1 AND base_url = $2 AND client_id = $3 AND login_id = $4 AND login_required_at IS NULL`,
    [ref.connection, ref.baseUrl, ref.clientId, loginId, reason],
  );
  return (rowCount ?? 0) > 0;
}

/** Records the scope of the latest token response of a connection (either kind), creating its row if needed. */
export async function recordScope(
  db: Queryable,
  ref: ConnectionRef,
  auth: AuthKind,
  scope: string | undefined,
): Promise<void> {
  await db.query(
    `INSERT INTO etl.connection_logins (connection, base_url, client_id, auth, granted_scope, scope_seen_at)
     VALUES ($1, $2, $3, $4, $5, now())
     ON CONFLICT (connection, base_url, client_id) DO UPDATE
       SET granted_scope = $5, scope_seen_at = now(), updated_at = now()`,
    [ref.connection, ref.baseUrl, ref.clientId, auth, scope ?? null],
  );
}

/** One connection's login state as the admin page and /metrics show it, without secrets. */
export interface ConnectionLoginRow {
  connection: string;
  base_url: string;
  client_id: string;
  auth: AuthKind;
  logged_in: boolean;
  logged_in_at: Date | null;
  requested_scopes: string[] | null;
  granted_scope: string | null;
  scope_seen_at: Date | null;
  login_required_at: Date | null;
  login_required_reason: string | null;
}

/** Every recorded connection (or only these names), by name. */
export async function listConnectionLogins(db: Queryable, names?: readonly string[]): Promise<ConnectionLoginRow[]> {
  const { rows } = await db.query<ConnectionLoginRow>(
    `SELECT connection, base_url, client_id, auth, login_id IS NOT NULL AS logged_in, logged_in_at, requested_scopes,
            granted_scope, scope_seen_at, login_required_at, login_required_reason
       FROM etl.connection_logins WHERE $1::text[] IS NULL OR connection = ANY($1)
      ORDER BY connection, base_url, client_id`,
    [names ? [...names] : null],
  );
  return rows;
}

/**
 * The ConnectionAuthStore (report-api/types.ts) of one connection.
 * @param key opens the refresh token of `auth: authorization_code`
 */
export function makeConnectionAuthStore(
  db: Queryable,
  ref: ConnectionRef,
  auth: AuthKind,
  key: SecretKey | undefined,
): ConnectionAuthStore {
  return {
    async loginState() {
      if (!key)
        return {
          kind: 'login_required',
          reason: `${SECRET_KEY_ENV} is not set, so the stored refresh token cannot be read`,
        };
      return readLoginState(db, key, ref);
    },
    async markLoginRequired(loginId, reason) {
      await markLoginRequired(db, ref, loginId, reason);
    },
    recordScope: (scope) => recordScope(db, ref, auth, scope),
  };
}
