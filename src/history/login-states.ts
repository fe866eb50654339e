/**
 * Pending logins, etl.login_states: the OAuth `state` of each authorization request (RFC 6749 10.12), accepted once
 * within 10 minutes. Only its SHA-256 is stored, so reading the table completes nobody's login. The PKCE code verifier
 * of a login (RFC 7636) is stored sealed under a key derived from the state: it opens only for the redirect that
 * brings the state back (migrations/0019).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Queryable } from '../db.ts';
import { open, seal, type SecretKey } from '../secret-box.ts';
import type { ConnectionRef } from './logins.ts';

/** How long a pending login waits for its redirect, in ms. */
export const LOGIN_STATE_TTL_MS = 10 * 60_000;

/** Who started a login. */
export type LoginStarter = 'cli' | 'admin';

/** A login as stored. */
export interface LoginStateRow {
  state_hash: string;
  connection: string;
  base_url: string;
  client_id: string;
  redirect_uri: string;
  scopes: string[];
  started_by: LoginStarter;
  created_at: Date;
  expires_at: Date;
  used_at: Date | null;
  outcome: 'logged_in' | 'failed' | null;
  message: string | null;
  /** The PKCE code verifier, sealed (see the file comment); null for a login without PKCE. */
  code_verifier_sealed: string | null;
}

/** SHA-256 of a state, hex. */
function stateHash(state: string): string {
  return createHash('sha256').update(state, 'utf8').digest('hex');
}

/** The key that seals a login's code verifier: derived from its state, which only the redirect brings back. */
function verifierKey(state: string): SecretKey {
  return { key: createHash('sha256').update(`report-etl code verifier\0${state}`, 'utf8').digest(), id: '' };
}

/**
 * Makes a pending login and returns its state (32 random bytes, base64url); removes those expired a day ago.
 * @param p.codeVerifier the login's PKCE code verifier, stored sealed (never logged); none for a login without PKCE
 */
export async function createLoginState(
  db: Queryable,
  p: {
    ref: ConnectionRef;
    redirectUri: string;
    scopes: readonly string[];
    startedBy: LoginStarter;
    ttlMs?: number;
    codeVerifier?: string | undefined;
  },
): Promise<string> {
  const state = randomBytes(32).toString('base64url');
  const hash = stateHash(state);
  await db.query(`DELETE FROM etl.login_states WHERE expires_at < now() - interval '1 day'`);
  await db.query(
    `INSERT INTO etl.login_states (state_hash, connection, base_url, client_id, redirect_uri, scopes, started_by,
                                   expires_at, code_verifier_sealed)
     VALUES ($1, $2, $3, $4, $5, $6, $7, now() + $8 * interval '1 millisecond', $9)`,
    [
      hash,
      p.ref.connection,
      p.ref.baseUrl,
      p.ref.clientId,
      p.redirectUri,
      [...p.scopes],
      p.startedBy,
      p.ttlMs ?? LOGIN_STATE_TTL_MS,
      p.codeVerifier === undefined ? null : seal(verifierKey(state), p.codeVerifier, hash),
    ],
  );
  return state;
}

/**
 * The PKCE code verifier of a pending login, opened with its state; undefined for a login without one.
 * @throws EtlError CONFIG_INVALID when it does not open (the row was altered, or the state is not this row's)
 */
export function codeVerifierOf(row: LoginStateRow, state: string): string | undefined {
  return row.code_verifier_sealed === null
    ? undefined
    : open(verifierKey(state), row.code_verifier_sealed, row.state_hash);
}

/**
 * Takes a pending login for its redirect, atomically: once, and before it expires.
 * @returns undefined when the state is unknown (forged), used already (replayed) or expired
 */
export async function consumeLoginState(db: Queryable, state: string): Promise<LoginStateRow | undefined> {
  const { rows } = await db.query<LoginStateRow>(
    `UPDATE etl.login_states SET used_at = now()
      WHERE state_hash = $1 AND used_at IS NULL AND expires_at > now() RETURNING *`,
    [stateHash(state)],
  );
  return rows[0];
}

/** Records how a consumed login ended, for a `report-etl login` that waits for it. */
export async function finishLoginState(
  db: Queryable,
  state: string,
  outcome: 'logged_in' | 'failed',
  message: string,
): Promise<void> {
  await db.query('UPDATE etl.login_states SET outcome = $2, message = $3 WHERE state_hash = $1', [
    stateHash(state),
    outcome,
    message,
  ]);
}

/** Reads a login by its state (used or not), or undefined. */
export async function getLoginState(db: Queryable, state: string): Promise<LoginStateRow | undefined> {
  const { rows } = await db.query<LoginStateRow>('SELECT * FROM etl.login_states WHERE state_hash = $1', [
    stateHash(state),
  ]);
  return rows[0];
}
