/**
 * What every module that talks to PostgreSQL shares: something that runs SQL, and one transaction helper
 * (CONVENTIONS.md "Lifecycle": a failed transaction is always rolled back before its error travels on).
 */
import type pg from 'pg';
import { isConnectionLoss } from './errors.ts';

/** Something that runs SQL: a pool or a checked-out client. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

/**
 * Runs `fn` inside BEGIN … COMMIT on a client of `pool`, released afterwards. A throw rolls back and is rethrown.
 * @returns what `fn` returned
 * @throws whatever BEGIN, `fn` or COMMIT threw (after ROLLBACK)
 */
export async function withTransaction<T>(pool: pg.Pool, fn: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('BEGIN');
    const value = await fn(client);
    await client.query('COMMIT');
    return value;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    broken = isConnectionLoss(err);
    throw err;
  } finally {
    releaseClient(client, broken);
  }
}

/**
 * Gives a client back to its pool; one whose connection was lost is destroyed instead, so that the pool does not
 * hand it to the next caller.
 */
export function releaseClient(client: pg.PoolClient, broken: boolean): void {
  client.release(broken ? new Error('connection lost') : undefined);
}
