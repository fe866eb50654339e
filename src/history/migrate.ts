/** Forward-only numbered migrations from `migrations/`, each in its own transaction, under an advisory lock. */
import { readdir, readFile } from 'node:fs/promises';
import type pg from 'pg';
import type { Queryable } from '../db.ts';
import type { Logger } from '../logger.ts';
import { silentLogger } from '../logger.ts';
import { EtlError } from '../errors.ts';

const MIGRATIONS_DIR = new URL('../../migrations/', import.meta.url);

/** Advisory lock key of the migrator. */
const MIGRATE_LOCK_KEY = 7_310_221_001;

/** One migration file. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/**
 * Reads `<4 digits>_<name>.sql` files, sorted by version.
 * @throws EtlError on a duplicate version
 */
export async function readMigrations(dir: URL = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const version = Number(file.slice(0, 4));
    if (migrations.some((m) => m.version === version)) {
      throw new EtlError('INTERNAL', `two migrations with version ${version} in ${dir.pathname}`);
    }
    migrations.push({ version, name: file.slice(5, -4), sql: await readFile(new URL(file, dir), 'utf8') });
  }
  return migrations;
}

async function appliedVersions(db: Queryable): Promise<Set<number>> {
  const { rows } = await db.query<{ version: number }>('SELECT version FROM etl.schema_migrations');
  return new Set(rows.map((r) => r.version));
}

/**
 * Applies every migration not yet recorded in `etl.schema_migrations`.
 * @param o.through only up to this version (tests of a later migration over an older release's data)
 * @returns the versions applied by this call
 * @throws pg errors of a failing migration (rolled back; earlier ones stay)
 */
export async function migrate(
  pool: pg.Pool,
  logger: Logger = silentLogger,
  o: { through?: number | undefined } = {},
): Promise<number[]> {
  const migrations = (await readMigrations()).filter((m) => o.through === undefined || m.version <= o.through);
  // Every command start comes here: one query, without the lock, when all are applied.
  const alreadyApplied = await appliedVersions(pool).catch(() => undefined);
  if (alreadyApplied && migrations.every((m) => alreadyApplied.has(m.version))) return [];
  const client = await pool.connect();
  const applied: number[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATE_LOCK_KEY]);
    await client.query('CREATE SCHEMA IF NOT EXISTS etl');
    await client.query(
      `CREATE TABLE IF NOT EXISTS etl.schema_migrations (
         version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const done = await appliedVersions(client);
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(m.sql);
        await client.query('INSERT INTO etl.schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw err;
      }
      applied.push(m.version);
      logger.info({ version: m.version, name: m.name }, 'migration applied');
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATE_LOCK_KEY]).catch(() => undefined);
    client.release();
  }
  return applied;
}
