/**
 * The owner of the attempts a process runs: one PostgreSQL session per process that holds
 * a session-level advisory lock on a random key for the life of the process. Every attempt the process records
 * carries that key (`etl.attempts.owner_lock`, migrations/0007). When the process dies in any way (kill -9, crash, OOM,
 * lost machine) PostgreSQL ends the session and frees the lock, so "is the owner gone?" is one
 * `pg_try_advisory_lock` away, with no clock, heartbeat interval or Redis TTL to wait for (see orphans.ts).
 *
 * Needs a direct session to PostgreSQL: a pooler in transaction mode (PgBouncer) would hand the lock to
 * whichever session runs the statement.
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { coerceError } from '../errors.ts';
import type { Logger } from '../logger.ts';

/** The owner session of one process. */
export interface AttemptOwner {
  /** The advisory lock key, a positive bigint as decimal text (`etl.attempts.owner_lock`). */
  readonly key: string;
  /** Whether the session holds the lock now (false while it reconnects after losing its connection). */
  holds(): boolean;
  /** Frees the lock and gives the session back. Idempotent. */
  close(): Promise<void>;
}

/** How long the owner waits before it opens a new session after losing one, in ms. */
const RECONNECT_MS = 2_000;

/** A random positive 63-bit key, so owners never share one. */
function randomKey(): string {
  const b = randomBytes(8);
  b[0]! &= 0x7f;
  return b.readBigInt64BE().toString();
}

/**
 * Opens the owner session: takes a connection out of `pool` for the life of the process and locks a fresh key on
 * it. A lost connection is replaced (and the key locked again) every {@link RECONNECT_MS} until it works; in
 * between, the janitor may take the process's attempts for orphans: they are then recorded interrupted and do not
 * commit (runAttempt's commit checks the attempt is still `running`), which is safe.
 * @throws pg errors when the first session cannot be opened
 */
export async function openAttemptOwner(pool: pg.Pool, logger: Logger): Promise<AttemptOwner> {
  const key = randomKey();
  const log = logger.child({ component: 'attempt-owner', ownerLock: key });
  let client: pg.PoolClient | undefined;
  let holding = false;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;

  const lock = async (): Promise<void> => {
    const c = await pool.connect();
    c.on('error', (err) => {
      if (closed || client !== c) return;
      holding = false;
      client = undefined;
      c.release(err);
      log.warn({ err: err.message }, 'owner session lost: its attempts may be taken for orphans until it is back');
      schedule();
    });
    await c.query('SELECT pg_advisory_lock($1::bigint)', [key]);
    client = c;
    holding = true;
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
    holds: () => holding,
    close() {
      closing ??= (async () => {
        closed = true;
        if (timer) clearTimeout(timer);
        const c = client;
        client = undefined;
        holding = false;
        if (!c) return;
        await c.query('SELECT pg_advisory_unlock($1::bigint)', [key]).catch(() => undefined);
        c.release();
      })();
      return closing;
    },
  };
}
