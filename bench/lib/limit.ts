/**
 * The physical limit `npm run bench` compares with: PostgreSQL's own COPY of the same rows as CSV,
 * by `psql \copy` from a file, on the same machine in the same run. The psql times are its whole process (start and
 * connection included, about 20 ms), the product's are from its first request to its commit.
 * - {@link dumpCsv}: the loaded target's rows → a CSV file (COPY ... TO STDOUT, FORMAT csv).
 * - {@link copyReplace}: what the product's replace does on its direct plan, minus everything else: in one
 *   transaction DELETE every row of a table holding the same number of rows, then `\copy` the file in.
 * - {@link copyEmpty}: the second reference: `\copy` the file into an empty table in one transaction.
 */
import { execFile } from 'node:child_process';
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import type pg from 'pg';
import pgCopyStreams from 'pg-copy-streams';

const exec = promisify(execFile);

/**
 * Runs psql with `commands` (-c each) in one transaction (-1).
 * @returns the wall time in ms and the row count of the last `COPY n` psql printed (0 when none)
 */
export async function psql(databaseUrl: string, commands: string[]): Promise<{ ms: number; rows: number }> {
  const started = performance.now();
  const { stdout } = await exec(
    'psql',
    [databaseUrl, '-X', '-v', 'ON_ERROR_STOP=1', '-1', ...commands.flatMap((c) => ['-c', c])],
    { maxBuffer: 1 << 20 },
  );
  const ms = performance.now() - started;
  const copied = [...stdout.matchAll(/^COPY (\d+)$/gm)].at(-1);
  return { ms, rows: copied ? Number(copied[1]) : 0 };
}

/**
 * Writes `table`'s report columns to `file` as CSV and makes the two limit tables `<table>_lim` (holding the same
 * rows) and `<table>_empty` (empty), both `LIKE table INCLUDING ALL` without the lineage columns an append target
 * has (docs/loaded-tables.md "Lineage of appended rows"): the limit is PostgreSQL's COPY of the report's values alone.
 * @returns the CSV's size in bytes
 */
export async function dumpCsv(db: pg.Client, table: string, file: string): Promise<number> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT quote_ident(attname) AS name FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT ` +
      `attisdropped AND attname NOT IN ('_etl_run_key', '_etl_loaded_at') ORDER BY attnum`,
    [table],
  );
  await pipeline(
    db.query(pgCopyStreams.to(`COPY ${table} (${rows.map((r) => r.name).join(', ')}) TO STDOUT WITH (FORMAT csv)`)),
    createWriteStream(file),
  );
  for (const suffix of ['_lim', '_empty']) {
    await db.query(`DROP TABLE IF EXISTS ${table}${suffix}`);
    await db.query(`CREATE TABLE ${table}${suffix} (LIKE ${table} INCLUDING ALL)`);
    await db.query(
      `ALTER TABLE ${table}${suffix} DROP COLUMN IF EXISTS _etl_run_key, DROP COLUMN IF EXISTS _etl_loaded_at`,
    );
  }
  await copyFile(db, `${table}_lim`, file);
  await db.query(`VACUUM ANALYZE ${table}_lim`);
  return (await stat(file)).size;
}

async function copyFile(db: pg.Client, table: string, file: string): Promise<number> {
  const copy = db.query(pgCopyStreams.from(`COPY ${table} FROM STDIN WITH (FORMAT csv)`));
  await pipeline(createReadStream(file, { highWaterMark: 256 * 1024 }), copy);
  return copy.rowCount;
}

/** What one limit measurement gives. */
export interface LimitResult {
  rows: number;
  /** BEGIN to COMMIT, in ms. */
  durationMs: number;
}

/**
 * psql -1: DELETE FROM `<table>_lim`; \copy the file in — the product's replace (direct plan) done by PostgreSQL
 * alone. The session settings match the loader's (DateStyle ISO, DMY; the connection's zone).
 */
export async function copyReplace(databaseUrl: string, table: string, file: string): Promise<LimitResult> {
  const r = await psql(databaseUrl, [
    `SET LOCAL DateStyle = 'ISO, DMY'`,
    `SET LOCAL TimeZone = 'Europe/Zurich'`,
    `DELETE FROM ${table}_lim`,
    `\\copy ${table}_lim FROM '${file}' WITH (FORMAT csv)`,
  ]);
  return { rows: r.rows, durationMs: r.ms };
}

/** TRUNCATE `<table>_empty` (not timed), then psql -1: \copy the file in (timed). */
export async function copyEmpty(db: pg.Client, databaseUrl: string, table: string, file: string): Promise<LimitResult> {
  await db.query(`TRUNCATE ${table}_empty`);
  const r = await psql(databaseUrl, [
    `SET LOCAL DateStyle = 'ISO, DMY'`,
    `SET LOCAL TimeZone = 'Europe/Zurich'`,
    `\\copy ${table}_empty FROM '${file}' WITH (FORMAT csv)`,
  ]);
  return { rows: r.rows, durationMs: r.ms };
}
