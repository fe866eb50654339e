/**
 * Access tokens of a user-dependent service user (docs/report-export-service.md "User-dependent service user", "Refresh"): obtained
 * with the refresh grant and shared through Redis exactly as client-credentials tokens are (token-cache.ts: one
 * renewal at a time across every process). The Redis key is the HMAC fingerprint keyed by the refresh token, so a
 * new login (a new refresh token) never uses an access token of the old one, and the refresh token itself never
 * reaches Redis.
 *
 * A refused refresh is recorded in the store (LOGIN_REQUIRED): from then on every process fails at once, without
 * asking the token endpoint, until the next login. The store is read at most every `stateTtlMs` per process; the
 * process that is about to ask the token endpoint reads it fresh, so a refused refresh token is sent only once.
 */
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';
import { LoginRequiredError } from './errors.ts';
import { TokenCache, tokenCacheKey, type AccessTokens } from './token-cache.ts';
import type { IssuedToken } from './token-request.ts';
import type { ConnectionAuthStore, LoginState } from './types.ts';

/** Options of {@link makeUserAccessTokens}. */
export interface UserAccessTokensOptions {
  redis: Redis;
  /** Redis key prefix, e.g. 'report-etl:'. */
  keyPrefix: string;
  baseUrl: string;
  clientId: string;
  /** jobs.yaml connection name (LOGIN_REQUIRED names it and the command to run). */
  connection: string;
  store: ConnectionAuthStore;
  /** The refresh grant (oauth-grants.ts refreshAccessToken, bound to the connection). */
  refresh: (refreshToken: string) => Promise<IssuedToken>;
  /** Called after a token was issued (records its scope). */
  onIssued?: (token: IssuedToken) => Promise<void>;
  /** As TokenCacheOptions, in ms. */
  renewBeforeMs: number;
  lockTtlMs: number;
  waitTimeoutMs: number;
  /** How long a process trusts its last read of the login state, ms (default 2000). */
  stateTtlMs?: number;
  logger: Logger;
  /** Counts requests to the token endpoint (the /metrics counter). */
  countRequest?: () => Promise<void>;
}

/** Makes the access-token source of a user-dependent connection; see the module doc. */
export function makeUserAccessTokens(o: UserAccessTokensOptions): AccessTokens {
  const ttl = o.stateTtlMs ?? 2_000;
  let memo: { at: number; state: LoginState } | undefined;
  let current: TokenCache | undefined;
  const caches = new Map<string, TokenCache>();
  const fresh = async (): Promise<LoginState> => {
    const state = await o.store.loginState();
    memo = { at: Date.now(), state };
    return state;
  };
  const state = async (): Promise<LoginState> => (memo && Date.now() - memo.at < ttl ? memo.state : fresh());
  const cacheFor = (loginId: string, refreshToken: string): TokenCache => {
    let cache = caches.get(loginId);
    if (!cache) {
      cache = new TokenCache({
        redis: o.redis,
        key: tokenCacheKey(o.keyPrefix, o.baseUrl, o.clientId, refreshToken),
        renewBeforeMs: o.renewBeforeMs,
        lockTtlMs: o.lockTtlMs,
        waitTimeoutMs: o.waitTimeoutMs,
        logger: o.logger,
        ...(o.onIssued ? { onIssued: o.onIssued } : {}),
        fetchToken: async () => {
          // Another process may have been refused meanwhile, or a new login replaced this one: never send a
          // refused refresh token again.
          const now = await fresh();
          if (now.kind !== 'logged_in') throw new LoginRequiredError(o.connection, now.reason);
          if (now.login.loginId !== loginId)
            throw new LoginRequiredError(
              o.connection,
              'a new login replaced this one while the run started; run it again',
            );
          await o.countRequest?.();
          try {
            return await o.refresh(refreshToken);
          } catch (err) {
            if (err instanceof LoginRequiredError) {
              await o.store.markLoginRequired(loginId, err.reason);
              memo = undefined;
              o.logger.warn(
                { connection: o.connection, reason: err.reason },
                'refresh token refused: runs of this connection wait for `report-etl login`',
              );
            }
            throw err;
          }
        },
      });
      // Only the current login's cache is kept.
      caches.clear();
      caches.set(loginId, cache);
    }
    return cache;
  };
  return {
    async get(signal) {
      const s = await state();
      if (s.kind !== 'logged_in') throw new LoginRequiredError(o.connection, s.reason);
      current = cacheFor(s.login.loginId, s.login.refreshToken);
      return current.get(signal);
    },
    async invalidate(accessToken) {
      return current ? current.invalidate(accessToken) : false;
    },
    scope() {
      return current?.scope();
    },
  };
}
