/**
 * The access token cache shared by every process through Redis (docs/report-export-service.md "Client credentials
 * grant" rule 2). The key holds a JSON {@link CachedToken} with a TTL of its remaining lifetime. Renewal is single
 * flight across processes: whoever wins `SET <key>:lock <owner> NX PX` asks the token endpoint, the others poll the
 * key. Lock and entry are deleted only by compare-and-delete.
 */
import { createHmac, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { AbortedError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { deleteIfOwner, extendIfOwner } from '../redis-owned-key.ts';
import { TokenError } from './errors.ts';
import { sleep } from '../backoff.ts';
import type { IssuedToken } from './token-request.ts';

/** One cache entry: `expiresAt` is request time + expires_in, `renewAt` when to obtain a new one (epoch ms). */
interface CachedToken {
  accessToken: string;
  expiresAt: number;
  renewAt: number;
  scope?: string;
}

/** Where authorized calls get their access token: {@link TokenCache}, or user-tokens.ts for the refresh grant. */
export interface AccessTokens {
  /** A valid access token. @throws TokenError, LoginRequiredError, ServerUnreachableError, AbortedError */
  get(signal?: AbortSignal): Promise<string>;
  /** Drops the shared entry if it still holds `accessToken` (the one a 401 refused). @returns whether it was deleted */
  invalidate(accessToken: string): Promise<boolean>;
  /** The space-separated scope of the token this process last obtained or read, if the server named one. */
  scope(): string | undefined;
}

/** Deletes KEYS[1] only while it still holds the token ARGV[1] (a 401 must not drop a newer token). */
const DELETE_IF_TOKEN = `
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local ok, t = pcall(cjson.decode, v)
if ok and type(t) == 'table' and t.accessToken == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/** The Redis counter of every process's token requests (read by /metrics). */
export function tokenRequestsKey(prefix = 'report-etl:'): string {
  return `${prefix}metrics:token_requests`;
}

/**
 * The Redis key of a connection's token: `${prefix}token:` + 16 hex digits of HMAC-SHA256(clientSecret, baseUrl +
 * '\n' + clientId): a rotated secret never finds the old token, and the secret never reaches Redis.
 */
export function tokenCacheKey(prefix: string, baseUrl: string, clientId: string, clientSecret: string): string {
  const fingerprint = createHmac('sha256', clientSecret).update(`${baseUrl}\n${clientId}`).digest('hex').slice(0, 16);
  return `${prefix}token:${fingerprint}`;
}

/** Options of {@link TokenCache}; times in ms. */
export interface TokenCacheOptions {
  redis: Redis;
  /** The entry's key ({@link tokenCacheKey}); the lock is `${key}:lock`. */
  key: string;
  /** Renew this long before expiry (at most half the token's lifetime). */
  renewBeforeMs: number;
  /** Asks the token endpoint; called by the lock holder only. */
  fetchToken: () => Promise<IssuedToken>;
  /** Told of each issued token (records its scope); its errors are logged, not thrown. */
  onIssued?: (token: IssuedToken) => Promise<void>;
  /** Lock lifetime: a crashed holder blocks the others at most this long. */
  lockTtlMs: number;
  /** How long to wait for another process's new token. */
  waitTimeoutMs: number;
  logger: Logger;
}

/** Redis-shared, single-flight access token cache; see the module doc. */
export class TokenCache implements AccessTokens {
  private readonly opts: TokenCacheOptions;
  private readonly lockKey: string;
  private inflight: Promise<string> | undefined;
  private lastScope: string | undefined;

  constructor(opts: TokenCacheOptions) {
    this.opts = opts;
    this.lockKey = `${opts.key}:lock`;
  }

  /** The cached token, or a new one obtained once for all processes. @throws TokenError, AbortedError */
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

  scope(): string | undefined {
    return this.lastScope;
  }

  async invalidate(accessToken: string): Promise<boolean> {
    const deleted = (await this.opts.redis.eval(DELETE_IF_TOKEN, 1, this.opts.key, accessToken)) === 1;
    this.opts.logger.debug({ deleted }, 'access token refused with 401; cache entry compare-and-delete');
    return deleted;
  }

  private async read(): Promise<CachedToken | undefined> {
    const raw = await this.opts.redis.get(this.opts.key);
    if (raw === null) return undefined;
    try {
      const entry = JSON.parse(raw) as Partial<CachedToken>;
      if (typeof entry.accessToken !== 'string' || typeof entry.expiresAt !== 'number') return undefined;
      if (entry.expiresAt <= Date.now()) return undefined;
      const renewAt = typeof entry.renewAt === 'number' ? entry.renewAt : entry.expiresAt - this.opts.renewBeforeMs;
      this.lastScope = typeof entry.scope === 'string' ? entry.scope : undefined;
      return { accessToken: entry.accessToken, expiresAt: entry.expiresAt, renewAt };
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
    const lifetimeMs = token.expiresInSeconds * 1000;
    const expiresAt = requestedAt + lifetimeMs;
    const renewAt = expiresAt - Math.min(this.opts.renewBeforeMs, lifetimeMs / 2);
    const ttlMs = Math.floor(expiresAt - Date.now());
    this.lastScope = token.scope;
    if (ttlMs > 0) {
      const entry: CachedToken = { accessToken: token.accessToken, expiresAt, renewAt };
      if (token.scope !== undefined) entry.scope = token.scope;
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
