/**
 * The simulator's state of user-dependent service users (docs/report-export-service.md "User-dependent service user",
 * "Refresh"): login sessions of product users, authorization codes and refresh tokens, on a clock that tests can move
 * forward. Rules:
 * - a code is single use, valid 60 s, bound to client, redirect URI, user, session and granted scopes, and to its
 *   PKCE code_challenge when the request had one (RFC 7636 section 4.6: the grant must bring the matching
 *   code_verifier; any try, right or wrong, uses the code up);
 * - a refresh token is issued by the code grant only (Refresh rule 1), replaces the earlier one of the same client
 *   and user (rule 3; rule 4: "regenerated"), and lives 60 days with offline access, 10 hours without (rule 2),
 *   as long as the user's session lives (logout ends it, rule 4).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { SimulatorOAuthCounters, SimulatorUser } from './types.ts';

/** Refresh token validity with offline access (docs/report-export-service.md "Limits"), ms. */
export const OFFLINE_VALIDITY_MS = 60 * 86_400_000;
/** Refresh token validity without offline access (docs/report-export-service.md "Limits"), ms. */
export const ONLINE_VALIDITY_MS = 10 * 3_600_000;
/** Lifetime of an authorization code, ms (RFC 6749 section 4.1.2: short, at most 10 minutes). */
export const CODE_LIFETIME_MS = 60_000;

interface Session {
  username: string;
  alive: boolean;
}

interface Code {
  clientId: string;
  redirectUri: string;
  username: string;
  sessionId: string;
  scope: string;
  /** The authorization request's PKCE challenge, when it had one. */
  challenge?: { value: string; method: PkceMethod } | undefined;
  expiresAt: number;
  used: boolean;
}

/** The PKCE methods of RFC 7636 section 4.2. */
export type PkceMethod = 'S256' | 'plain';

/** Whether `verifier` answers `challenge` (RFC 7636 section 4.6). */
function verifies(verifier: string, challenge: { value: string; method: PkceMethod }): boolean {
  const derived = challenge.method === 'S256' ? createHash('sha256').update(verifier).digest('base64url') : verifier;
  const a = Buffer.from(derived);
  const b = Buffer.from(challenge.value);
  return a.length === b.length && timingSafeEqual(a, b);
}

interface RefreshToken {
  clientId: string;
  username: string;
  sessionId: string;
  scope: string;
  expiresAt: number;
}

/** Why a refresh token was refused, or the grant it allows. */
export type RefreshCheck = { ok: true; scope: string; username: string } | { ok: false; reason: string };

/** Sessions, codes and refresh tokens; times on {@link UserLogins.now}. */
export class UserLogins {
  readonly users: Map<string, SimulatorUser>;
  readonly #sessions = new Map<string, Session>();
  readonly #codes = new Map<string, Code>();
  readonly #refresh = new Map<string, RefreshToken>();
  #offsetMs = 0;
  readonly counters: SimulatorOAuthCounters = {
    grants: { client_credentials: 0, authorization_code: 0, refresh_token: 0 },
    refusedRefreshes: 0,
    logins: 0,
    refreshTokensIssued: [],
    pkce: { challenged: { S256: 0, plain: 0 }, verified: 0, refused: 0 },
  };

  constructor(users: SimulatorUser[]) {
    this.users = new Map(users.map((u) => [u.username, u]));
  }

  /** The simulator's clock for refresh-token validity: real time plus {@link advance}d offset, epoch ms. */
  now(): number {
    return Date.now() + this.#offsetMs;
  }

  /** Moves the clock forward by `ms`. */
  advance(ms: number): void {
    this.#offsetMs += ms;
  }

  /** The user of a session cookie value, when the session is alive. */
  sessionUser(sessionId: string | undefined): string | undefined {
    const s = sessionId ? this.#sessions.get(sessionId) : undefined;
    return s?.alive ? s.username : undefined;
  }

  /** Starts a session for a user who logged in with their password. @returns the session id (cookie value) */
  startSession(username: string): string {
    const id = randomBytes(18).toString('base64url');
    this.#sessions.set(id, { username, alive: true });
    return id;
  }

  /**
   * The session_state of a session (docs/report-export-service.md "User-dependent service user" step 3: identifies the
   * session): a hash, not the cookie value.
   */
  sessionState(sessionId: string): string {
    return createHash('sha256').update(sessionId).digest('base64url').slice(0, 22);
  }

  /** Issues a code (docs/report-export-service.md "User-dependent service user" step 3). */
  issueCode(c: Omit<Code, 'expiresAt' | 'used'>): string {
    const code = randomBytes(24).toString('base64url');
    this.#codes.set(code, { ...c, expiresAt: this.now() + CODE_LIFETIME_MS, used: false });
    this.counters.logins++;
    if (c.challenge) this.counters.pkce.challenged[c.challenge.method]++;
    return code;
  }

  /**
   * Redeems a code once (RFC 6749 section 4.1.3), checking its PKCE challenge when it has one (RFC 7636 section 4.6).
   * @param codeVerifier the grant's code_verifier (null: none sent; ignored for a code without a challenge)
   * @returns the code's grant, or why it is refused
   */
  redeemCode(
    code: string,
    clientId: string,
    redirectUri: string | null,
    codeVerifier: string | null,
  ): { ok: true; code: Code } | { ok: false; reason: string } {
    const c = this.#codes.get(code);
    if (!c) return { ok: false, reason: 'Code not valid' };
    if (c.used) return { ok: false, reason: 'Code already used' };
    if (this.now() >= c.expiresAt) return { ok: false, reason: 'Code expired' };
    if (c.clientId !== clientId) return { ok: false, reason: 'Code was issued to another client' };
    if (c.redirectUri !== redirectUri) return { ok: false, reason: 'Incorrect redirect_uri' };
    c.used = true;
    if (c.challenge) {
      if (codeVerifier === null || !verifies(codeVerifier, c.challenge)) {
        this.counters.pkce.refused++;
        return { ok: false, reason: codeVerifier === null ? 'Missing code_verifier' : 'PKCE verification failed' };
      }
      this.counters.pkce.verified++;
    }
    return { ok: true, code: c };
  }

  /** Issues the refresh token of a redeemed code, replacing the client's earlier one for that user. */
  issueRefreshToken(c: Code): string {
    for (const [t, r] of this.#refresh)
      if (r.clientId === c.clientId && r.username === c.username) this.#refresh.delete(t);
    const token = randomBytes(36).toString('base64url');
    const offline = this.users.get(c.username)?.offlineAccess ?? true;
    this.#refresh.set(token, {
      clientId: c.clientId,
      username: c.username,
      sessionId: c.sessionId,
      scope: c.scope,
      expiresAt: this.now() + (offline ? OFFLINE_VALIDITY_MS : ONLINE_VALIDITY_MS),
    });
    this.counters.refreshTokensIssued.push(token);
    return token;
  }

  /** Checks a refresh token for `clientId` (docs/report-export-service.md "Refresh" rules 2 and 4). */
  checkRefreshToken(token: string, clientId: string): RefreshCheck {
    const r = this.#refresh.get(token);
    if (!r || r.clientId !== clientId) return { ok: false, reason: 'Invalid refresh token' };
    if (this.now() >= r.expiresAt) return { ok: false, reason: 'Token is not active' };
    if (!this.#sessions.get(r.sessionId)?.alive) return { ok: false, reason: 'Session not active' };
    return { ok: true, scope: r.scope, username: r.username };
  }

  /** Logs a user out: sessions end, refresh tokens die. @returns whether there was anything to end */
  logout(username: string): boolean {
    let any = false;
    for (const s of this.#sessions.values()) {
      if (s.username === username && s.alive) {
        s.alive = false;
        any = true;
      }
    }
    for (const [t, r] of this.#refresh) {
      if (r.username === username) {
        this.#refresh.delete(t);
        any = true;
      }
    }
    return any;
  }
}
