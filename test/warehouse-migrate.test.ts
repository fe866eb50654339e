/** The migrator: forward-only, and safe when several processes run it at once (advisory lock). */
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makePool } from '../src/app/connections.ts';
import { silentLogger } from '../src/logger.ts';
import { migrate, readMigrations } from '../src/history/migrate.ts';
import { DATABASE_URL, uniqueName } from './support/env.ts';

const dbName = uniqueName('migrate');
let admin: pg.Client;
beforeAll(async () => {
  admin = new pg.Client({ connectionString: DATABASE_URL });
  admin.on('error', () => undefined);
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
});
afterAll(async () => {
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
});

it('applies every migration exactly once when four processes migrate a fresh database at the same time', async () => {
  const url = new URL(DATABASE_URL);
  url.pathname = `/${dbName}`;
  // makePool attaches error listeners: DROP DATABASE ... WITH (FORCE) below must not surface as an uncaught error.
  const pools = Array.from({ length: 4 }, () => makePool(silentLogger, url.toString(), 2));
  try {
    const applied = await Promise.all(pools.map((p) => migrate(p)));
    const versions = (await readMigrations()).map((m) => m.version);
    // Exactly one process applied the migrations; the others found them done.
    expect(applied.flat().sort()).toEqual(versions);
    expect(applied.filter((a) => a.length > 0)).toHaveLength(1);
    const { rows } = await pools[0]!.query('SELECT version FROM etl.schema_migrations ORDER BY version');
    expect(rows.map((r) => r.version)).toEqual(versions);
    expect(await migrate(pools[0]!)).toEqual([]);
    const tables = await pools[0]!.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'etl' ORDER BY tablename`);
    expect(tables.rows.map((r) => r.tablename)).toEqual(expect.arrayContaining(['appended_runs', 'run_errors', 'runs', 'schema_migrations']));
  } finally {
    await Promise.all(pools.map((p) => p.end()));
  }
});
