/** Clean-up of a bench's Redis keys. */
import type { Redis } from 'ioredis';

/** Deletes every Redis key under `prefix:` (the bench's BullMQ queue, slots and locks). */
export async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
}
