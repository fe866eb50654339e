/**
 * The access token cache shared by every process through Redis (docs/report-export-service.md "Client credentials grant" rule 2:
 * reuse the token for its whole validity, renew shortly before expiry, no token per call).
 *
 * Key `${prefix}token:${hmacSha256(clientSecret, baseUrl + '\n' + clientId).slice(0, 16)}` holds JSON
 * `{ accessToken, expiresAt, renewAt }` (epoch ms) with a Redis TTL equal to the remaining lifetime. The key is
 * a fingerprint of the credentials, so a wrong or rotated secret never finds the token obtained with the old one:
 * it asks the token endpoint itself and fails at once when the secret is wrong.
 * Renewal is single flight across processes: whoever wins `SET <key>:lock <owner> NX PX` asks the token
 * endpoint, the others poll the key with short sleeps (or keep using a still-valid token meanwhile). The
 * lock and the entry are only ever deleted by compare-and-delete Lua scripts.
 */
import { createHmac, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { AbortedError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { deleteIfOwner, extendIfOwner } from '../redis-owned-key.ts';
import { TokenError } from './errors.ts';
import { sleep } from './http.ts';
import type { IssuedToken } from './token-request.ts';

/** One cache entry; times are epoch milliseconds. */
export interface CachedToken {
  accessToken: string;
  /** When the server stops accepting the token (request time + expires_in). */
  expiresAt: number;
  /** From when on a process should obtain a new one. */
  renewAt: number;
  /** The token response's `scope` (space-separated), when it had one (docs/report-export-service.md "Token response"). */
  scope?: string;
}

/**
 * Where authorized calls get their access token: the client-credentials {@link TokenCache}, or the refresh-grant
 * tokens of a user-dependent service user (user-tokens.ts), both shared through Redis.
 */
export interface AccessTokens {
  /** A valid access token. @throws TokenError, LoginRequiredError, ServerUnreachableError, AbortedError */
  get(signal?: AbortSignal): Promise<string>;
  /** Drops the shared entry if it still holds `accessToken` (the one a 401 refused). @returns whether it was deleted */
  invalidate(accessToken: string): Promise<boolean>;
  /** The scope of the token last obtained or read by this process (space-separated), undefined when none was named. */
  scope(): string | undefined;
}

/** Deletes KEYS[1] only while it still holds the token ARGV[1] (a 401 must not drop a newer token). */
const DELETE_IF_TOKEN = `
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local ok, t = pcall(cjson.decode, v)
if ok and type(t) == 'table' and t.accessToken == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/** The Redis counter of token requests of every process (read by /metrics): `${prefix}metrics:token_requests`. */
export function tokenRequestsKey(prefix = 'report-etl:'): string {
  return `${prefix}metrics:token_requests`;
}

/**
 * The Redis key of a connection's token: `${prefix}token:` + the first 16 hex digits of
 * HMAC-SHA256(key = clientSecret, data = baseUrl + '\n' + clientId).
 *
 * The secret is in the key's fingerprint, so clients with different secrets for the same server and Client-ID
 * never share a token (a wrong secret passed while a token was cached). Keyed by the secret, the HMAC
 * can only be computed by who holds the secret, and the secret itself never reaches Redis.
 * @param prefix e.g. 'report-etl:'
 * @param baseUrl the connection's baseUrl (the service's base URL), as configured
 */
export function tokenCacheKey(prefix: string, baseUrl: string, clientId: string, clientSecret: string): string {
  const fingerprint = createHmac('sha256', clientSecret).update(`${baseUrl}\n${clientId}`).digest('hex').slice(0, 16);
  return `${prefix}token:${fingerprint}`;
}

/** Options of {@link TokenCache}. */
export interface TokenCacheOptions {
  redis: Redis;
  /** Full Redis key of the entry, see {@link tokenCacheKey}; the lock is `${key}:lock`. */
  key: string;
  /** Renew this many ms before expiry (at most half the token's lifetime). */
  renewBeforeMs: number;
  /** Asks the token endpoint; called by the lock holder only. */
  fetchToken: () => Promise<IssuedToken>;
  /** Called after the token endpoint issued a token (e.g. to record its scope); its errors are logged, not thrown. */
  onIssued?: (token: IssuedToken) => Promise<void>;
  /** Lock lifetime in ms: a crashed holder blocks the others at most this long. */
  lockTtlMs: number;
  /** How long a waiter waits for another process's new token before giving up, in ms. */
  waitTimeoutMs: number;
  logger: Logger;
}

/** Redis-shared, single-flight access token cache; see the module doc. */
export class TokenCache implements AccessTokens {
  private readonly opts: TokenCacheOptions;
  private readonly lockKey: string;
  private inflight: Promise<string> | undefined;
  private lastScope: string | undefined;
  /** Tokens this process obtained from the token endpoint (for tests and metrics). */
  fetched = 0;

  constructor(opts: TokenCacheOptions) {
    this.opts = opts;
    this.lockKey = `${opts.key}:lock`;
  }

  /**
   * A valid access token: the cached one, or a new one obtained once for all processes.
   * @throws TokenError (token endpoint failed, or waiting for another process timed out); AbortedError
   */
  async get(signal?: AbortSignal): Promise<string> {
    if (signal?.aborted) throw new AbortedError(signal.reason);
    const cached = await this.read();
    if (cached !== undefined && cached.renewAt > Date.now()) return cached.accessToken;
    // One obtain() per process at a time; each caller may still give up on its own signal.
    this.inflight ??= this.obtain().finally(() => {
      this.inflight = undefined;
    });
    if (signal === undefined) return this.inflight;
    return new Promise<string>((resolve, reject) => {
      const onAbort = (): void => reject(new AbortedError(signal.reason));
      signal.addEventListener('abort', onAbort, { once: true });
      this.inflight!.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  /** The scope of the token last obtained or read (docs/report-export-service.md "Token response": scope), undefined when none was named. */
  scope(): string | undefined {
    return this.lastScope;
  }

  /**
   * Drops the cached entry if it still holds `accessToken` (the one a 401 refused).
   * @returns whether the entry was deleted (false: already gone or replaced by a newer token)
   */
  async invalidate(accessToken: string): Promise<boolean> {
    const deleted = (await this.opts.redis.eval(DELETE_IF_TOKEN, 1, this.opts.key, accessToken)) === 1;
    this.opts.logger.debug({ deleted }, 'access token refused with 401; cache entry compare-and-delete');
    return deleted;
  }

  /** The current entry, if any and not expired. */
  async read(): Promise<CachedToken | undefined> {
    const raw = await this.opts.redis.get(this.opts.key);
    if (raw === null) return undefined;
    try {
      const entry = JSON.parse(raw) as Partial<CachedToken>;
      if (typeof entry.accessToken !== 'string' || typeof entry.expiresAt !== 'number') return undefined;
      if (entry.expiresAt <= Date.now()) return undefined;
      const renewAt = typeof entry.renewAt === 'number' ? entry.renewAt : entry.expiresAt - this.opts.renewBeforeMs;
      const scope = typeof entry.scope === 'string' ? entry.scope : undefined;
      this.lastScope = scope;
      return {
        accessToken: entry.accessToken,
        expiresAt: entry.expiresAt,
        renewAt,
        ...(scope !== undefined ? { scope } : {}),
      };
    } catch {
      return undefined;
    }
  }

  private async obtain(): Promise<string> {
    const { redis, lockTtlMs } = this.opts;
    const deadline = Date.now() + this.opts.waitTimeoutMs;
    for (;;) {
      const cached = await this.read();
      if (cached !== undefined && cached.renewAt > Date.now()) return cached.accessToken;
      const owner = randomUUID();
      if ((await redis.set(this.lockKey, owner, 'PX', lockTtlMs, 'NX')) === 'OK') {
        // A slow token endpoint (timeouts, retries) may take longer than the lock lives: keep it while we fetch,
        // or the others would take it over and ask for tokens of their own.
        const keep = setInterval(
          () => {
            extendIfOwner(redis, this.lockKey, owner, lockTtlMs).catch(() => undefined);
          },
          Math.max(50, Math.floor(lockTtlMs / 3)),
        );
        try {
          // Another process may have stored a token between our read and our lock.
          const again = await this.read();
          if (again !== undefined && again.renewAt > Date.now()) return again.accessToken;
          return await this.fetchAndStore();
        } finally {
          clearInterval(keep);
          await deleteIfOwner(redis, this.lockKey, owner).catch((err: unknown) => {
            this.opts.logger.warn({ err }, 'could not release the token lock; it expires by itself');
          });
        }
      }
      // Someone else renews; a token that is still valid serves meanwhile.
      if (cached !== undefined && cached.expiresAt > Date.now() + 1_000) return cached.accessToken;
      if (Date.now() > deadline) {
        throw new TokenError(
          `waited ${this.opts.waitTimeoutMs} ms for another process to obtain the access token (lock ${this.lockKey})`,
        );
      }
      await sleep(15 + Math.floor(Math.random() * 20));
    }
  }

  private async fetchAndStore(): Promise<string> {
    const requestedAt = Date.now();
    const token = await this.opts.fetchToken();
    this.fetched++;
    const lifetimeMs = token.expiresInSeconds * 1000;
    const expiresAt = requestedAt + lifetimeMs;
    const renewAt = expiresAt - Math.min(this.opts.renewBeforeMs, lifetimeMs / 2);
    const ttlMs = Math.floor(expiresAt - Date.now());
    this.lastScope = token.scope;
    if (ttlMs > 0) {
      const entry: CachedToken = {
        accessToken: token.accessToken,
        expiresAt,
        renewAt,
        ...(token.scope !== undefined ? { scope: token.scope } : {}),
      };
      await this.opts.redis.set(this.opts.key, JSON.stringify(entry), 'PX', ttlMs);
    }
    await this.opts
      .onIssued?.(token)
      .catch((err: unknown) =>
        this.opts.logger.warn({ err: (err as Error).message }, "could not record the token response's scope"),
      );
    this.opts.logger.debug({ expiresInSeconds: token.expiresInSeconds }, 'obtained a new access token');
    return token.accessToken;
  }
}
