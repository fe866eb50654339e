/**
 * An abort (maxRunMs, a shutdown) ends a load transaction whatever PostgreSQL holds it with, and nothing commits after
 * it (docs/architecture.md "Limits"): a statement sent after the abort that waits for a lock another session holds is
 * cancelled too, and an abort that comes between statements stops the COMMIT. Real PostgreSQL.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makePool } from '../src/app/connections.ts';
import { StatementCancelledError } from '../src/db.ts';
import { silentLogger } from '../src/logger.ts';
import { withLoadTransaction } from '../src/warehouse/copy-load.ts';
import { DATABASE_URL, uniqueName } from './support/env.ts';
import { waitFor } from './support/wait.ts';

const schema = uniqueName('ltabort');
let pool: pg.Pool;
beforeAll(async () => {
  // Named, so that a test can see its canceller's session (it connects with the pool's options).
  const url = new URL(DATABASE_URL);
  url.searchParams.set('application_name', schema);
  pool = makePool(silentLogger, url.toString(), 4);
  await pool.query(
    `CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.t (n int); INSERT INTO ${schema}.t VALUES (1), (2)`,
  );
});
afterAll(async () => {
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pool.end();
});

const rowsOf = async (): Promise<number[]> =>
  (await pool.query<{ n: number }>(`SELECT n FROM ${schema}.t ORDER BY n`)).rows.map((r) => r.n);

it('cancels a statement sent after the abort that waits for a lock another session holds', async () => {
  const blocker = await pool.connect();
  try {
    await blocker.query('BEGIN');
    await blocker.query(`LOCK TABLE ${schema}.t IN ACCESS EXCLUSIVE MODE`);
    const controller = new AbortController();
    const load = withLoadTransaction(
      pool,
      { target: { schema, table: 't' }, timezone: 'UTC', signal: controller.signal },
      async (tx) => {
        // The abort comes while this process is busy elsewhere: the canceller looks and finds nothing to cancel; the
        // DELETE is sent after that, and waits for the lock.
        controller.abort(new Error('deadline'));
        await waitFor('the canceller to look', async () => {
          const { rowCount } = await pool.query(
            `SELECT 1 FROM pg_stat_activity
              WHERE application_name = $1 AND pid <> pg_backend_pid() AND query LIKE '%pg_cancel_backend%'`,
            [schema],
          );
          return rowCount;
        });
        await tx.query(`DELETE FROM ${schema}.t`);
        return true;
      },
    );
    const err = await load.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StatementCancelledError);
    expect((err as StatementCancelledError).cancelled).toEqual({ waitEventType: 'Lock', waitEvent: 'relation' });
  } finally {
    await blocker.query('ROLLBACK');
    blocker.release();
  }
  expect(await rowsOf()).toEqual([1, 2]);
});

it("cancels by the protocol's cancel request when PostgreSQL has no connection to spare", async () => {
  // A role allowed one connection: the load holds it, so the canceller cannot connect to ask pg_cancel_backend.
  const role = uniqueName('ltrole');
  await pool.query(
    `CREATE ROLE ${role} LOGIN CONNECTION LIMIT 1; GRANT USAGE ON SCHEMA ${schema} TO ${role}; GRANT ALL ON ${schema}.t TO ${role}`,
  );
  const url = new URL(DATABASE_URL);
  url.username = role;
  const limited = makePool(silentLogger, url.toString(), 1);
  const blocker = await pool.connect();
  try {
    await blocker.query('BEGIN');
    await blocker.query(`LOCK TABLE ${schema}.t IN ACCESS EXCLUSIVE MODE`);
    const controller = new AbortController();
    const load = withLoadTransaction(
      limited,
      { target: { schema, table: 't' }, timezone: 'UTC', signal: controller.signal },
      async (tx) => {
        await tx.query(`DELETE FROM ${schema}.t`);
        return true;
      },
    );
    await waitFor('the DELETE to wait for the lock', async () => {
      const { rowCount } = await pool.query(
        `SELECT 1 FROM pg_stat_activity WHERE usename = $1 AND wait_event_type = 'Lock'`,
        [role],
      );
      return rowCount;
    });
    controller.abort(new Error('deadline'));
    const err = await load.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StatementCancelledError);
    expect((err as StatementCancelledError).cancelled).toEqual({ waitEventType: null, waitEvent: null, unseen: true });
  } finally {
    await blocker.query('ROLLBACK');
    blocker.release();
    await limited.end();
    await pool.query(
      `REVOKE ALL ON ${schema}.t FROM ${role}; REVOKE USAGE ON SCHEMA ${schema} FROM ${role}; DROP ROLE ${role}`,
    );
  }
  expect(await rowsOf()).toEqual([1, 2]);
});

it('does not commit when the abort came between statements, and not at all when it came before', async () => {
  const controller = new AbortController();
  const err = await withLoadTransaction(
    pool,
    { target: { schema, table: 't' }, timezone: 'UTC', signal: controller.signal },
    async (tx) => {
      await tx.query(`INSERT INTO ${schema}.t VALUES (3)`);
      controller.abort(new Error('deadline passed'));
      return true;
    },
  ).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect((err as Error).message).toBe('deadline passed');
  expect(await rowsOf()).toEqual([1, 2]);
  let ran = false;
  const early = await withLoadTransaction(
    pool,
    { target: { schema, table: 't' }, timezone: 'UTC', signal: controller.signal },
    async () => {
      ran = true;
      return true;
    },
  ).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect({ message: (early as Error).message, ran }).toEqual({ message: 'deadline passed', ran: false });
});
