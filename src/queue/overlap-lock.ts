/**
 * The overlap lock of a job: at most one run of a job at a time across all workers. A Redis
 * key held with a TTL and renewed while the run lasts, so that a worker killed mid-run frees it after the TTL.
 * The holder is the BullMQ job id: a new attempt of the same queued run (after a stall) takes the lock over at
 * once instead of waiting for the dead attempt's TTL.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';
import { deleteIfOwner, extendIfOwner } from '../redis-owned-key.ts';

/** Default TTL of the lock in ms; it is renewed every third of it. */
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
export interface HeldLock {
  readonly key: string;
  /** Whether a renewal found the lock taken by someone else (the TTL ran out while the process stalled). */
  lost(): boolean;
  /**
   * Extends the lock now and says whether it is still ours: false when it was lost (now or by an earlier renewal)
   * or Redis cannot be asked (then nobody can tell, so it counts as lost).
   */
  confirm(): Promise<boolean>;
  release(): Promise<void>;
}

/**
 * Tries to take the lock `key` for the queued run `owner` (BullMQ job id).
 * @param ttlMs lock TTL in ms (default {@link OVERLAP_LOCK_TTL_MS}); renewed every ttlMs/3 until released
 * @returns the held lock, or undefined when another run holds it
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
  let lost = false;
  const timer = setInterval(
    () => {
      extendIfOwner(redis, key, value, ttlMs).then(
        (ok) => {
          if (!ok && !lost) {
            lost = true;
            logger.warn({ key }, 'overlap lock lost: another run of this job may start');
          }
        },
        (err: unknown) => logger.warn({ key, err: (err as Error).message }, 'could not renew the overlap lock'),
      );
    },
    Math.max(100, Math.floor(ttlMs / 3)),
  );
  timer.unref();
  let released: Promise<void> | undefined;
  return {
    key,
    lost: () => lost,
    async confirm() {
      if (lost) return false;
      const ok = await extendIfOwner(redis, key, value, ttlMs).catch(() => false);
      if (!ok && !lost) {
        lost = true;
        logger.warn({ key }, 'overlap lock lost: another run of this job may start');
      }
      return ok;
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
