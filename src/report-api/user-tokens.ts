/**
 * Access tokens of a user-dependent service user (docs/report-export-service.md "Refresh"): from the refresh grant,
 * shared through Redis as token-cache.ts does, keyed by the refresh token's fingerprint. A refused refresh is recorded
 * in the store, so every process fails at once until the next login; the store is read fresh before asking the token
 * endpoint, so a refused refresh token is sent once.
 */
import { LoginRequiredError } from './errors.ts';
import { TokenCache, tokenCacheKey, type AccessTokens, type TokenCacheOptions } from './token-cache.ts';
import type { IssuedToken } from './token-request.ts';
import type { ConnectionAuthStore, LoginState } from './types.ts';

/** Options of {@link makeUserAccessTokens}: TokenCacheOptions' and the connection's. */
interface UserAccessTokensOptions extends Omit<TokenCacheOptions, 'key' | 'fetchToken'> {
  /** Redis key prefix, e.g. 'report-etl:'. */
  keyPrefix: string;
  baseUrl: string;
  clientId: string;
  /** jobs.yaml connection name, for LOGIN_REQUIRED. */
  connection: string;
  store: ConnectionAuthStore;
  /** The refresh grant, bound to the connection. */
  refresh: (refreshToken: string) => Promise<IssuedToken>;
  /** How long a process trusts its last read of the login state, ms (default 2000). */
  stateTtlMs?: number;
  /** Counts requests to the token endpoint (for /metrics). */
  countRequest?: () => Promise<void>;
}

/** The access-token source of a user-dependent connection; see the module doc. */
export function makeUserAccessTokens(o: UserAccessTokensOptions): AccessTokens {
  const ttl = o.stateTtlMs ?? 2_000;
  let memo: { at: number; state: LoginState } | undefined;
  let current: TokenCache | undefined;
  // Only the current login's cache is kept.
  let latest: { loginId: string; cache: TokenCache } | undefined;
  const fresh = async (): Promise<LoginState> => {
    const state = await o.store.loginState();
    memo = { at: Date.now(), state };
    return state;
  };
  const state = async (): Promise<LoginState> => (memo && Date.now() - memo.at < ttl ? memo.state : fresh());
  const cacheFor = (loginId: string, refreshToken: string): TokenCache => {
    if (latest?.loginId !== loginId) {
      const cache = new TokenCache({
        redis: o.redis,
        key: tokenCacheKey(o.keyPrefix, o.baseUrl, o.clientId, refreshToken),
        renewBeforeMs: o.renewBeforeMs,
        lockTtlMs: o.lockTtlMs,
        waitTimeoutMs: o.waitTimeoutMs,
        logger: o.logger,
        ...(o.onIssued ? { onIssued: o.onIssued } : {}),
        fetchToken: async () => {
          // Another process may have been refused meanwhile, or a new login replaced this one.
          const now = await fresh();
          if (now.kind !== 'logged_in') throw new LoginRequiredError(o.connection, now.reason);
          if (now.login.loginId !== loginId) {
            const reason = 'a new login replaced this one while the run started; run it again';
            throw new LoginRequiredError(o.connection, reason);
          }
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
      latest = { loginId, cache };
    }
    return latest.cache;
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
