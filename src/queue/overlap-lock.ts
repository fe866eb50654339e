/**
 * The overlap lock of a job (docs/architecture.md "Liveness"): a Redis key with a TTL, renewed while the run lasts.
 * Its holder is the queue job id, so that a new attempt of the same queued run (after a stall) takes it over at once.
 * A renewal that finds the key gone or another's aborts the lock's `lost` signal, which stops the attempt at once.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';
import { OverlapLockLost, type ExclusiveLock } from '../pipeline/attempt.ts';
import { deleteIfOwner, extendIfOwner } from '../redis-owned-key.ts';

/** Default TTL of the lock in ms; renewed every third of it. */
export const OVERLAP_LOCK_TTL_MS = 30_000;

// KEYS[1] lock key; ARGV[1] owner prefix ("<queue job id>|"), ARGV[2] full value, ARGV[3] ttl ms.
const ACQUIRE = `
local cur = redis.call('GET', KEYS[1])
if (not cur) or string.sub(cur, 1, string.len(ARGV[1])) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0`;

/** A held lock; `release()` is idempotent. */
export interface HeldLock extends ExclusiveLock {
  /** Extends the lock now: false when it is lost, or Redis cannot be asked (nobody can tell). */
  confirm(): Promise<boolean>;
  /**
   * Aborts with an {@link OverlapLockLost} once a renewal or `confirm()` found the key gone or another's (not when
   * Redis could not be asked: that is logged, and the commit's `confirm()` decides); never after `release()`.
   */
  readonly lost: AbortSignal;
  release(): Promise<void>;
}

/**
 * Tries to take the lock `key` for the queued run `owner` (queue job id).
 * @returns undefined when another run holds it
 */
export async function tryOverlapLock(
  redis: Redis,
  key: string,
  owner: string,
  logger: Logger,
  ttlMs = OVERLAP_LOCK_TTL_MS,
): Promise<HeldLock | undefined> {
  const value = `${owner}|${randomUUID()}`;
  const got = (await redis.eval(ACQUIRE, 1, key, `${owner}|`, value, String(ttlMs))) as number;
  if (got !== 1) return undefined;
  const lost = new AbortController();
  let released: Promise<void> | undefined;
  const renewed = (ok: boolean) => {
    if (!ok && !lost.signal.aborted && !released) {
      logger.warn({ key }, 'overlap lock lost: another run of this job may start; its attempt stops');
      lost.abort(new OverlapLockLost());
    }
    return ok;
  };
  const timer = setInterval(
    () =>
      void extendIfOwner(redis, key, value, ttlMs).then(renewed, (err: unknown) =>
        logger.warn({ key, err: (err as Error).message }, 'could not renew the overlap lock'),
      ),
    Math.max(100, Math.floor(ttlMs / 3)),
  );
  timer.unref();
  return {
    lost: lost.signal,
    async confirm() {
      if (lost.signal.aborted) return false;
      const ok = await extendIfOwner(redis, key, value, ttlMs).catch((err: unknown) => {
        logger.warn({ key, err: (err as Error).message }, 'could not confirm the overlap lock');
        return undefined;
      });
      return ok === undefined ? false : renewed(ok);
    },
    release() {
      released ??= (async () => {
        clearInterval(timer);
        await deleteIfOwner(redis, key, value);
      })();
      return released;
    },
  };
}
