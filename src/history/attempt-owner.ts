/**
 * The owner session of a process's attempts (docs/architecture.md "Liveness"): a session-level advisory lock on a
 * random key, held for the life of the process and recorded with each attempt (etl.attempts.owner_lock). Needs a
 * direct session: a pooler in transaction mode would hand the lock to whichever session runs the statement.
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { coerceError } from '../errors.ts';
import type { Logger } from '../logger.ts';

/** The owner session of one process. */
export interface AttemptOwner {
  /** The advisory lock key, a positive bigint as decimal text. */
  readonly key: string;
  /** Frees the lock and gives the session back. Idempotent. */
  close(): Promise<void>;
}

/** Wait before opening a new session after losing one, in ms. */
const RECONNECT_MS = 2_000;

/** A random positive 63-bit key. */
function randomKey(): string {
  const b = randomBytes(8);
  b[0]! &= 0x7f;
  return b.readBigInt64BE().toString();
}

/**
 * Takes a connection out of `pool` for the life of the process and locks a fresh key on it; a lost connection is
 * replaced every {@link RECONNECT_MS}. Meanwhile the janitor may close the process's attempts as orphans, which is
 * safe: a commit checks its attempt is still `running`.
 * @throws pg errors when the first session cannot be opened
 */
export async function openAttemptOwner(pool: pg.Pool, logger: Logger): Promise<AttemptOwner> {
  const key = randomKey();
  const log = logger.child({ component: 'attempt-owner', ownerLock: key });
  let client: pg.PoolClient | undefined;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;

  const lock = async (): Promise<void> => {
    const c = await pool.connect();
    c.on('error', (err) => {
      if (closed || client !== c) return;
      client = undefined;
      c.release(err);
      log.warn({ err: err.message }, 'owner session lost: its attempts may be taken for orphans until it is back');
      schedule();
    });
    await c.query('SELECT pg_advisory_lock($1::bigint)', [key]);
    client = c;
  };
  const schedule = () => {
    if (closed) return;
    timer = setTimeout(() => {
      lock().then(
        () => log.info('owner session back'),
        (err: unknown) => {
          log.warn({ err: coerceError(err).message }, 'owner session: reconnect failed, trying again');
          schedule();
        },
      );
    }, RECONNECT_MS);
    timer.unref();
  };
  await lock();
  let closing: Promise<void> | undefined;
  return {
    key,
    close() {
      closing ??= (async () => {
        closed = true;
        if (timer) clearTimeout(timer);
        const c = client;
        client = undefined;
        if (!c) return;
        await c.query('SELECT pg_advisory_unlock($1::bigint)', [key]).catch(() => undefined);
        c.release();
      })();
      return closing;
    },
  };
}
