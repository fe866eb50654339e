/**
 * etl.connection_logins: a user-dependent service user's refresh token, sealed (secret-box.ts) and never read by
 * the listings; its login and scopes; the latest token's scope (either kind); and whether runs need a new login.
 */
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db.ts';
import type { ConnectionAuthStore } from '../report-api/types.ts';
import type { AuthKind } from '../report-api/report-rules.ts';
import { open, seal, SECRET_KEY_ENV, type SecretKey } from '../secret-box.ts';

/** The table's key: jobs.yaml connection name, base URL and Client-ID. */
export type ConnectionRef = { connection: string; baseUrl: string; clientId: string };

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
 * Stores a new login over the previous one (docs/report-export-service.md "Refresh" rule 3), clearing LOGIN_REQUIRED.
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
 * The login row of connection `name` as jobs.yaml has it now: a row is kept per (name, server, client), so a
 * connection pointed at another server or client has none until it logs in there.
 */
export function loginRowOf(
  rows: readonly ConnectionLoginRow[],
  name: string,
  c: { baseUrl: string; clientId: string },
): ConnectionLoginRow | undefined {
  return rows.find((r) => r.connection === name && r.base_url === c.baseUrl && r.client_id === c.clientId);
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
  const row = 'connection = $1 AND base_url = $2 AND client_id = $3';
  const refArgs = [ref.connection, ref.baseUrl, ref.clientId];
  const required = (reason: string) => ({ kind: 'login_required' as const, reason });
  return {
    async loginState() {
      if (!key) return required(`${SECRET_KEY_ENV} is not set, so the stored refresh token cannot be read`);
      const { rows } = await db.query<{
        login_id: string | null;
        refresh_token_sealed: string | null;
        key_id: string | null;
        login_required_at: Date | null;
        login_required_reason: string | null;
      }>(
        `SELECT login_id, refresh_token_sealed, key_id, login_required_at, login_required_reason
           FROM etl.connection_logins WHERE ${row}`,
        refArgs,
      );
      const r = rows[0];
      if (!r || r.login_id === null || r.refresh_token_sealed === null)
        return required('nobody has logged in for this connection yet');
      if (r.login_required_at !== null) return required(r.login_required_reason ?? 'the refresh token was refused');
      // A login sealed with another key counts as none: a new login stores it with this one.
      if (r.key_id !== key.id) return required(`the login was stored with another ${SECRET_KEY_ENV}`);
      return {
        kind: 'logged_in',
        login: { loginId: r.login_id, refreshToken: open(key, r.refresh_token_sealed, aad(ref)) },
      };
    },
    async markLoginRequired(loginId, reason) {
      // Only this login: a newer one is left alone.
      await db.query(
        `UPDATE etl.connection_logins SET login_required_at = now(), login_required_reason = $5, updated_at = now()
          WHERE ${row} AND login_id = $4 AND login_required_at IS NULL`,
        [...refArgs, loginId, reason],
      );
    },
    async recordScope(scope) {
      await db.query(
        `INSERT INTO etl.connection_logins (connection, base_url, client_id, auth, granted_scope, scope_seen_at)
         VALUES ($1, $2, $3, $4, $5, now())
         ON CONFLICT (connection, base_url, client_id) DO UPDATE
           SET granted_scope = $5, scope_seen_at = now(), updated_at = now()`,
        [...refArgs, auth, scope ?? null],
      );
    },
  };
}
