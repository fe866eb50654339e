/**
 * Does something answer at a PostgreSQL or Redis URL? The probes behind the local fallbacks of the demo and the
 * tests (docs/architecture.md "Tests"): "nothing answers" (refused, timed out, unknown host) lets a
 * fallback start; a server that answers but refuses (wrong password, missing database) is the user's to fix, so it
 * is reported, never hidden behind a fallback.
 */
import type { ChildProcess } from 'node:child_process';
import { createServer, Socket } from 'node:net';
import pg from 'pg';
import { Redis } from 'ioredis';

/** How long a probe waits for a connection before it counts as "nothing answers", in ms. */
export const PROBE_TIMEOUT_MS = 1500;

/** What a probe found: a server that works, nothing at all, or a server that answered with an error. */
export type ProbeResult =
  { kind: 'answers' } | { kind: 'nothing'; reason: string } | { kind: 'refuses'; reason: string };

/** Node's codes for "no server there": the connection never reached one. */
const NOTHING_THERE = new Set([
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNRESET',
  'EADDRNOTAVAIL',
]);

/** `host:port` of a URL, for messages (never the password). */
export function hostPort(url: string, defaultPort: number): string {
  const u = new URL(url);
  return `${u.hostname || '127.0.0.1'}:${u.port || defaultPort}`;
}

function networkCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; errors?: Array<{ code?: unknown }> };
  if (typeof e.code === 'string') return e.code;
  // Node's happy-eyeballs connect reports an AggregateError of the addresses it tried.
  return e.errors?.map((x) => x.code).find((c): c is string => typeof c === 'string');
}

/**
 * Connects to `url` and runs `SELECT 1`.
 * @param timeoutMs connect timeout in ms ({@link PROBE_TIMEOUT_MS})
 * @returns `answers`, `nothing` (refused, timeout, unknown host) or `refuses` (the server's own error, e.g. 28P01,
 * 3D000)
 */
export async function probePostgres(url: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<ProbeResult> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeoutMs,
    application_name: 'report-etl probe',
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return { kind: 'answers' };
  } catch (err) {
    const code = networkCode(err);
    const message = err instanceof Error ? err.message : String(err);
    if ((code && NOTHING_THERE.has(code)) || /timeout|terminated unexpectedly/i.test(message))
      return { kind: 'nothing', reason: code ?? message };
    return { kind: 'refuses', reason: code ? `${code}: ${message}` : message };
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Connects to `url` once (no reconnects) and sends PING.
 * @param timeoutMs connect timeout in ms
 * @returns `answers`, `nothing` (refused, timeout, unknown host) or `refuses` (e.g. NOAUTH, WRONGPASS)
 */
export async function probeRedis(url: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<ProbeResult> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  // A refused connect rejects with "Connection is closed."; the socket's own error (ECONNREFUSED …) comes as an event.
  let socketError: unknown;
  redis.on('error', (err: unknown) => (socketError ??= err));
  try {
    await redis.connect();
    await redis.ping();
    return { kind: 'answers' };
  } catch (err) {
    const code = networkCode(socketError) ?? networkCode(err);
    const message = err instanceof Error ? err.message : String(err);
    if ((code && NOTHING_THERE.has(code)) || /ETIMEDOUT|timed? ?out|Connection is closed/i.test(message))
      return { kind: 'nothing', reason: code ?? message };
    return { kind: 'refuses', reason: message };
  } finally {
    // After a refused connect the client has ended; disconnect() would still arm ioredis' 2 s destroy timer.
    if (redis.status !== 'end') redis.disconnect();
  }
}

/** True when a TCP connection to host:port is accepted (used to prove a stopped server's port is closed). */
export async function portAcceptsConnections(
  port: number,
  host = '127.0.0.1',
  timeoutMs = PROBE_TIMEOUT_MS,
): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.connect(port, host);
  });
}

/** A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * Polls `check` until it returns true, or fails with `what` after `timeoutMs`.
 * @param stopEarly polled too: a text makes the wait fail at once with it (e.g. the server process exited)
 * @throws Error `<what> did not happen within <s> s` (or the stopEarly text)
 */
export async function pollUntil(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  stopEarly: () => string | undefined = () => undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let interval = 25;
  for (;;) {
    const early = stopEarly();
    if (early) throw new Error(early);
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${Math.round(timeoutMs / 1000)} s`);
    await new Promise((r) => setTimeout(r, interval));
    interval = Math.min(interval * 2, 250);
  }
}

/**
 * A stop() for a server child process: `gentle` signal, then `hard` after `timeoutMs` if it has not exited; waits for
 * the exit and removes the process-exit safety net. A second call waits for the first.
 */
export function childStopper(
  child: ChildProcess,
  exited: Promise<void>,
  killOnExit: () => void,
  o: { gentle: NodeJS.Signals; hard: NodeJS.Signals; timeoutMs: number },
): () => Promise<void> {
  let stopping: Promise<void> | undefined;
  return () =>
    (stopping ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(o.gentle);
        const timer = setTimeout(() => child.kill(o.hard), o.timeoutMs);
        await exited;
        clearTimeout(timer);
      }
      process.removeListener('exit', killOnExit);
    })());
}
