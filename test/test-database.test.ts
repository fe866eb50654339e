/**
 * The suite works in a database of its own, `<name>_test` on the server of the `<name>` DATABASE_URL names, and
 * never writes that one (docs/architecture.md "Tests"): test/support/global-setup.ts snapshots it before the first
 * file and compares after the last; this file compares in between and shows that a snapshot sees writes.
 */
import pg from 'pg';
import { expect, inject, it } from 'vitest';
import { DATABASE_URL, uniqueName } from './support/env.ts';
import { databaseName, snapshotChanges, snapshotDatabase } from './support/test-database.ts';
import { waitFor } from './support/wait.ts';

const original = inject('originalDatabase');

it('every worker and spawned process works in <name>_test on the same server', async () => {
  const [test, named] = [new URL(DATABASE_URL), new URL(original.url)];
  expect(test.host).toBe(named.host);
  expect(databaseName(DATABASE_URL)).toBe(`${databaseName(original.url)}_test`);
  // What every CLI, worker and demo the tests spawn inherits.
  expect(process.env.DATABASE_URL).toBe(DATABASE_URL);
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    expect((await client.query('SELECT current_database() AS db')).rows).toEqual([{ db: databaseName(DATABASE_URL) }]);
  } finally {
    await client.end();
  }
});

it('the database DATABASE_URL names has not changed since the suite began', async () => {
  expect(snapshotChanges(original.snapshot, await snapshotDatabase(original.url))).toEqual([]);
});

it('a snapshot shows new objects, etl rows and rows written into any table', async () => {
  const scratch = uniqueName('snapshot');
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${scratch}`);
  try {
    const url = new URL(DATABASE_URL);
    url.pathname = `/${scratch}`;
    const db = new pg.Client({ connectionString: url.toString() });
    await db.connect();
    await db.query('CREATE TABLE kept (n int); INSERT INTO kept VALUES (1)');
    await db.end();
    const before = await snapshotDatabase(url.toString());
    expect(snapshotChanges(before, await snapshotDatabase(url.toString()))).toEqual([]);
    const writer = new pg.Client({ connectionString: url.toString() });
    await writer.connect();
    await writer.query('CREATE SCHEMA etl; CREATE TABLE etl.runs (n int); INSERT INTO etl.runs VALUES (1), (2)');
    await writer.query('UPDATE kept SET n = 2');
    // A session's counts reach pg_stat_user_tables when it ends.
    await writer.end();
    const changes = await waitFor('the update counted', async () => {
      const found = snapshotChanges(before, await snapshotDatabase(url.toString()));
      return found.includes('public.kept: 1 rows written') && found;
    });
    expect(changes.map((c) => c.replace(/#\d+$/, '#oid'))).toEqual([
      '+ r etl.runs #oid',
      '+ schema etl',
      'etl.runs: 0 → 2 rows',
      'etl.runs: 2 rows written',
      'public.kept: 1 rows written',
    ]);
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${scratch} WITH (FORCE)`);
    await admin.end();
  }
});
