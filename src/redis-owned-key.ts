/**
 * Compare-and-act on a Redis key whose value is its holder's token: a holder whose key expired and was taken over
 * never touches the new holder's key.
 */
import type { Redis } from 'ioredis';

const EXTEND_IF_OWNER = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;

const DELETE_IF_OWNER = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/** Sets the TTL of `key` to `ttlMs` if it still holds `value`. @returns whether it did */
export async function extendIfOwner(redis: Redis, key: string, value: string, ttlMs: number): Promise<boolean> {
  return (await redis.eval(EXTEND_IF_OWNER, 1, key, value, String(ttlMs))) === 1;
}

/** Deletes `key` if it still holds `value`. @returns whether it did */
export async function deleteIfOwner(redis: Redis, key: string, value: string): Promise<boolean> {
  return (await redis.eval(DELETE_IF_OWNER, 1, key, value)) === 1;
}
