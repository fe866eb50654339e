/**
 * Access tokens of the simulator (docs/report-export-service.md "Client credentials grant", "Token response"): opaque
 * strings that look like signed JWTs, valid for expires_in seconds, or for expires_in * tokenLifetimeFactor when the
 * early-expiry fault is set, and refused once {@link TokenStore.expireAll} ran.
 */
import { randomBytes, randomUUID } from 'node:crypto';

/** Why a bearer token was refused, or the client it belongs to. */
export type TokenCheck = { ok: true; clientId: string } | { ok: false; reason: 'unknown' | 'expired' };

function b64url(value: string | Buffer): string {
  return Buffer.from(value).toString('base64url');
}

/** Issues and checks bearer tokens; all times in epoch ms. */
export class TokenStore {
  readonly #tokens = new Map<string, { clientId: string; expiresAt: number }>();
  #issued = 0;

  /**
   * Issues a token.
   * @param lifetimeSeconds the stated expires_in (s)
   * @param factor real lifetime = lifetimeSeconds * factor (1 = honest)
   * @param issuer the discovery issuer, written into the token's payload
   */
  issue(clientId: string, lifetimeSeconds: number, factor: number, issuer: string, now = Date.now()): string {
    const payload = {
      iss: issuer,
      sub: clientId,
      client_id: clientId,
      iat: Math.floor(now / 1000),
      exp: Math.floor(now / 1000) + lifetimeSeconds,
      jti: randomUUID(),
    };
    const token = [
      b64url('{"alg":"RS256","typ":"JWT"}'),
      b64url(JSON.stringify(payload)),
      b64url(randomBytes(64)),
    ].join('.');
    if (++this.#issued % 1000 === 0) this.#purge(now);
    this.#tokens.set(token, { clientId, expiresAt: now + lifetimeSeconds * factor * 1000 });
    return token;
  }

  /** Checks a bearer token. */
  check(token: string, now = Date.now()): TokenCheck {
    const t = this.#tokens.get(token);
    if (!t) return { ok: false, reason: 'unknown' };
    if (now >= t.expiresAt) return { ok: false, reason: 'expired' };
    return { ok: true, clientId: t.clientId };
  }

  /** Makes every token issued so far expired (401 from now on). */
  expireAll(): void {
    for (const t of this.#tokens.values()) t.expiresAt = 0;
  }

  #purge(now: number): void {
    // Expired tokens are kept an hour so that they still answer "expired" rather than "unknown".
    for (const [k, t] of this.#tokens) if (t.expiresAt + 3_600_000 < now) this.#tokens.delete(k);
  }
}
