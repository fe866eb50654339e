/**
 * Helpers of the hostile-server tests: a body streamed without holding it in memory, a webhook listener that keeps
 * every body it took, and every key and value Redis holds under a prefix, whatever the key's type.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';

/**
 * Answers `status` with a body of `total` bytes: `head`, then `x`s, then `tail`, with Content-Length, written as the
 * client reads.
 * @param count told every chunk's size as it is written
 */
export function streamBody(
  res: ServerResponse,
  status: number,
  contentType: string,
  head: string,
  total: number,
  tail: string,
  count: (bytes: number) => void,
): void {
  res.on('error', () => undefined);
  res.writeHead(status, { 'content-type': contentType, 'content-length': String(total) });
  const chunk = Buffer.alloc(64 * 1024, 'x');
  let left = total - head.length - tail.length;
  res.write(head);
  count(head.length);
  const more = (): void => {
    while (!res.destroyed && left > 0) {
      const part = left >= chunk.length ? chunk : chunk.subarray(0, left);
      left -= part.length;
      count(part.length);
      if (!res.write(part)) {
        res.once('drain', more);
        return;
      }
    }
    if (!res.destroyed) res.end(tail);
  };
  more();
}

/** A webhook target on 127.0.0.1 that answers 200 and keeps each body with its path. */
export interface Hooks {
  url: string;
  bodies: { path: string; text: string; bytes: number }[];
  close(): Promise<void>;
}

/** Starts a {@link Hooks} listener. */
export async function startHooks(): Promise<Hooks> {
  const bodies: Hooks['bodies'] = [];
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts);
      bodies.push({ path: req.url ?? '', text: body.toString('utf8'), bytes: body.length });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Every key under `prefix` and its value as text (strings, hashes, lists, sets, sorted sets, streams). */
export async function redisEntries(redis: Redis, prefix: string): Promise<{ key: string; value: string }[]> {
  const out: { key: string; value: string }[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    cursor = next;
    for (const key of keys) {
      const type = await redis.type(key);
      const value =
        type === 'string'
          ? await redis.get(key)
          : type === 'hash'
            ? await redis.hgetall(key)
            : type === 'list'
              ? await redis.lrange(key, 0, -1)
              : type === 'set'
                ? await redis.smembers(key)
                : type === 'zset'
                  ? await redis.zrange(key, '0', '-1')
                  : type === 'stream'
                    ? await redis.xrange(key, '-', '+')
                    : type;
      out.push({ key, value: typeof value === 'string' ? value : JSON.stringify(value) });
    }
  } while (cursor !== '0');
  return out;
}
