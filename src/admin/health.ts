/**
 * Readiness for `/readyz`: PostgreSQL and Redis both answer within a time limit, else the one that failed is named.
 * (`/healthz`, liveness, answers whenever the process serves HTTP.)
 */
import type { Redis } from 'ioredis';
import type { Queryable } from '../db.ts';
import { coerceError } from '../errors.ts';

/** The outcome of one dependency check. */
interface CheckResult {
  ok: boolean;
  /** Round trip in ms (also when it failed). */
  ms: number;
  /** What went wrong, e.g. `connect ECONNREFUSED 127.0.0.1:1` or `timed out after 2000 ms`. */
  error?: string;
}

async function check(run: () => Promise<unknown>, timeoutMs: number): Promise<CheckResult> {
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([run(), timeout]);
    return { ok: true, ms: ms() };
  } catch (err) {
    // Driver messages name host and port at most, never a connection string (which may hold a password).
    return { ok: false, ms: ms(), error: coerceError(err).message.split('\n')[0]!.slice(0, 300) };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Checks PostgreSQL (`SELECT 1`) and Redis (`PING`) in parallel, each within `timeoutMs`. Never throws.
 * @returns `ready` when both are ok, and each check's outcome
 */
export async function checkReadiness(
  deps: { pool: Queryable; redis: Pick<Redis, 'ping'> },
  timeoutMs = 2_000,
): Promise<{ ready: boolean; checks: { postgres: CheckResult; redis: CheckResult } }> {
  const [postgres, redis] = await Promise.all([
    check(() => deps.pool.query('SELECT 1'), timeoutMs),
    check(async () => {
      const pong = await deps.redis.ping();
      if (pong !== 'PONG') throw new Error(`unexpected PING answer ${JSON.stringify(pong)}`);
    }, timeoutMs),
  ]);
  return { ready: postgres.ok && redis.ok, checks: { postgres, redis } };
}
