/**
 * An abort (maxRunMs, a shutdown) ends a load transaction whatever PostgreSQL holds it with, and nothing commits after
 * it (docs/architecture.md "Limits"): a statement waiting for a lock another session holds is cancelled, one sent
 * after the abort is refused, the deadline's own timeouts end it when no connection is left to cancel it, and an abort
 * that comes between statements stops the COMMIT. Real PostgreSQL.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { makePool } from '../src/app/connections.ts';
import { silentLogger } from '../src/logger.ts';
import { StatementCancelledError, withLoadTransaction } from '../src/warehouse/load-transaction.ts';
import { DATABASE_URL, uniqueName } from './support/env.ts';

const schema = uniqueName('ltabort');
let pool: pg.Pool;
beforeAll(async () => {
  pool = makePool(silentLogger, DATABASE_URL, 4);
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

/** Waits until a session waits for a lock on the test's table. */
const waitingForLock = () =>
  vi.waitFor(
    async () => {
      const { rows } = await pool.query(
        `SELECT 1 FROM pg_locks WHERE relation = '${schema}.t'::regclass AND NOT granted`,
      );
      expect(rows).toHaveLength(1);
    },
    { timeout: 30_000, interval: 50 },
  );

it('an abort cancels a statement waiting for a lock, naming lock and holder, and refuses later ones', async () => {
  const blocker = await pool.connect();
  try {
    await blocker.query('BEGIN');
    await blocker.query(`LOCK TABLE ${schema}.t IN ACCESS EXCLUSIVE MODE`);
    const { rows } = await blocker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const controller = new AbortController();
    const load = withLoadTransaction(
      pool,
      { target: { schema, table: 't' }, timezone: 'UTC', signal: controller.signal },
      async (lt) => {
        await lt.tx.query(`DELETE FROM ${schema}.t`);
        await lt.commit();
      },
    );
    await waitingForLock();
    controller.abort(new Error('shutdown'));
    const err = await load.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StatementCancelledError);
    expect((err as StatementCancelledError).cancelled).toEqual({
      by: 'cancel',
      waitEventType: 'Lock',
      waitEvent: 'relation',
      relation: `${schema}.t`,
      heldBy: `pid ${rows[0]!.pid} (report-etl, idle in transaction)`,
    });

    // The abort comes while this process is busy elsewhere: the DELETE after it is never sent.
    const later = new AbortController();
    const refused = await withLoadTransaction(
      pool,
      { target: { schema, table: 't' }, timezone: 'UTC', signal: later.signal },
      async (lt) => {
        later.abort(new Error('deadline'));
        await lt.tx.query(`DELETE FROM ${schema}.t`);
      },
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((refused as Error).message).toBe('deadline');
    // Both ended while the other session still held its lock: it is released only now.
  } finally {
    await blocker.query('ROLLBACK');
    blocker.release();
  }
  expect(await rowsOf()).toEqual([1, 2]);
});

it("with no connection to spare for a cancel, PostgreSQL's lock_timeout ends a load past its deadline", async () => {
  // A role allowed one connection: the load holds it, so no other can ask pg_cancel_backend.
  const role = uniqueName('ltrole');
  await pool.query(
    `CREATE ROLE ${role} LOGIN CONNECTION LIMIT 1; GRANT USAGE ON SCHEMA ${schema} TO ${role}; ` +
      `GRANT ALL ON ${schema}.t TO ${role}`,
  );
  const url = new URL(DATABASE_URL);
  url.username = role;
  const limited = makePool(silentLogger, url.toString(), 1);
  const blocker = await pool.connect();
  try {
    await blocker.query('BEGIN');
    await blocker.query(`LOCK TABLE ${schema}.t IN ACCESS EXCLUSIVE MODE`);
    const controller = new AbortController();
    const o = {
      target: { schema, table: 't' },
      timezone: 'UTC',
      signal: controller.signal,
      deadline: performance.now() + 300,
    };
    const load = withLoadTransaction(limited, o, async (lt) => {
      await lt.tx.query(`DELETE FROM ${schema}.t`);
      await lt.commit();
    });
    await waitingForLock();
    controller.abort(new Error('deadline'));
    const err = await load.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StatementCancelledError);
    expect((err as StatementCancelledError).cancelled).toEqual({
      by: 'lock_timeout',
      waitEventType: 'Lock',
      waitEvent: null,
      relation: null,
      heldBy: null,
    });
    expect(((err as Error).cause as { code?: string }).code).toBe('55P03');
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
    async (lt) => {
      await lt.tx.query(`INSERT INTO ${schema}.t VALUES (3)`);
      controller.abort(new Error('deadline passed'));
      await lt.commit();
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
    },
  ).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect({ message: (early as Error).message, ran }).toEqual({ message: 'deadline passed', ran: false });
});
