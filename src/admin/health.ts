/**
 * Liveness and readiness: `/healthz` answers 200 whenever the process serves
 * HTTP; `/readyz` answers 200 only when PostgreSQL and Redis both answer within a time limit, else 503 naming
 * the one that failed.
 */
import type { Redis } from 'ioredis';
import type { Queryable } from '../db.ts';
import { coerceError } from '../errors.ts';

/** How long a readiness check waits for each dependency, in ms. */
export const READY_TIMEOUT_MS = 2_000;

/** The outcome of one dependency check. */
export interface CheckResult {
  ok: boolean;
  /** Round trip in ms (also when it failed). */
  ms: number;
  /** What went wrong, e.g. `connect ECONNREFUSED 127.0.0.1:1` or `timed out after 2000 ms`. */
  error?: string;
}

/** The `/readyz` body: `ready` is true only when every check is ok. */
export interface Readiness {
  ready: boolean;
  checks: { postgres: CheckResult; redis: CheckResult };
}

async function check(run: () => Promise<unknown>, timeoutMs: number): Promise<CheckResult> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([run(), timeout]);
    return { ok: true, ms: Math.round(performance.now() - started) };
  } catch (err) {
    // Driver messages name host and port at most; connection strings (which may hold a password) are not in them.
    return {
      ok: false,
      ms: Math.round(performance.now() - started),
      error: coerceError(err).message.split('\n')[0]!.slice(0, 300),
    };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Checks PostgreSQL (`SELECT 1`) and Redis (`PING`) in parallel, each within `timeoutMs`.
 * Never throws: failures are in the result.
 */
export async function checkReadiness(
  deps: { pool: Queryable; redis: Pick<Redis, 'ping'> },
  timeoutMs = READY_TIMEOUT_MS,
): Promise<Readiness> {
  const [postgres, redis] = await Promise.all([
    check(() => deps.pool.query('SELECT 1'), timeoutMs),
    check(async () => {
      const pong = await deps.redis.ping();
      if (pong !== 'PONG') throw new Error(`unexpected PING answer ${JSON.stringify(pong)}`);
    }, timeoutMs),
  ]);
  return { ready: postgres.ok && redis.ok, checks: { postgres, redis } };
}
