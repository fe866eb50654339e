/**
 * Helpers of the user-dependent login tests: a "browser" over plain HTTP that fills in the simulator's login form,
 * a logger that captures every line at debug level (with the production redaction), and a scan of Redis.
 */
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import type { Redis } from 'ioredis';
import { REDACT_PATHS } from '../../src/logger.ts';

/**
 * Opens the authorization URL, fills in the login form as `username` and submits it, like a browser would.
 * @returns the Location the simulator redirected to (the redirect URI with code or error), not followed
 */
export async function loginOnSimulator(authUrl: string, username: string, password: string): Promise<string> {
  const form = await fetch(authUrl);
  if (form.status !== 200) throw new Error(`login page answered ${form.status}: ${await form.text()}`);
  const html = await form.text();
  const login = html.slice(html.indexOf('<form method="post" id="login">'));
  const fields = new URLSearchParams();
  for (const m of login.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields.set(
      m[1]!,
      m[2]!
        .replaceAll('&amp;', '&')
        .replaceAll('&quot;', '"')
        .replaceAll('&#39;', "'")
        .replaceAll('&lt;', '<')
        .replaceAll('&gt;', '>'),
    );
  }
  fields.set('username', username);
  fields.set('password', password);
  const res = await fetch(authUrl.split('?')[0]!, {
    method: 'POST',
    body: fields,
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  if (res.status !== 302) throw new Error(`login form answered ${res.status}: ${await res.text()}`);
  return res.headers.get('location')!;
}

/** A logger at debug level with the production redaction, and every line it wrote (raw JSON text). */
export function captureAll(): { logger: Logger; text: () => string } {
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk.toString('utf8'));
      done();
    },
  });
  return {
    logger: pino({ level: 'debug', redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, sink),
    text: () => chunks.join(''),
  };
}

/** Every string and hash value in Redis, with its key (the whole shared Redis: the needles are unique). */
export async function redisDump(redis: Redis): Promise<string> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) {
      const type = await redis.type(key);
      out.push(key);
      if (type === 'string') out.push((await redis.get(key)) ?? '');
      else if (type === 'hash') out.push(JSON.stringify(await redis.hgetall(key)));
    }
  } while (cursor !== '0');
  return out.join('\n');
}
