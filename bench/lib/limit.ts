/**
 * The physical limit `npm run bench` compares with (issue 6): PostgreSQL's own COPY of the same rows, read by
 * pg-copy-streams from a CSV file, on the same machine in the same run.
 * - {@link dumpCsv}: the loaded target's rows → a CSV file (COPY ... TO STDOUT, FORMAT csv).
 * - {@link copyReplace}: what the product's replace does on its direct plan, minus everything else: in one
 *   transaction DELETE every row of a table holding the same number of rows, then COPY the file in.
 * - {@link copyEmpty}: the second reference: COPY the file into an empty table in one transaction.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import pgCopyStreams from 'pg-copy-streams';

/**
 * Writes `table`'s rows to `file` as CSV and makes the two limit tables `<table>_lim` (holding the same rows)
 * and `<table>_empty` (empty), both `LIKE table INCLUDING ALL`.
 * @returns the CSV's size in bytes
 */
export async function dumpCsv(db: pg.Client, table: string, file: string): Promise<number> {
  await pipeline(db.query(pgCopyStreams.to(`COPY ${table} TO STDOUT WITH (FORMAT csv)`)), createWriteStream(file));
  for (const suffix of ['_lim', '_empty']) {
    await db.query(`DROP TABLE IF EXISTS ${table}${suffix}`);
    await db.query(`CREATE TABLE ${table}${suffix} (LIKE ${table} INCLUDING ALL)`);
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
 * BEGIN; DELETE FROM `<table>_lim`; COPY the file in; COMMIT — the product's replace (direct plan) done by
 * PostgreSQL alone. The session settings match the loader's (DateStyle ISO, DMY).
 */
export async function copyReplace(db: pg.Client, table: string, file: string): Promise<LimitResult> {
  const t0 = performance.now();
  await db.query('BEGIN');
  await db.query(`SELECT set_config('DateStyle', 'ISO, DMY', true), set_config('TimeZone', 'Europe/Zurich', true)`);
  await db.query(`DELETE FROM ${table}_lim`);
  const rows = await copyFile(db, `${table}_lim`, file);
  await db.query('COMMIT');
  return { rows, durationMs: performance.now() - t0 };
}

/** TRUNCATE `<table>_empty` (not timed), then BEGIN; COPY the file in; COMMIT (timed). */
export async function copyEmpty(db: pg.Client, table: string, file: string): Promise<LimitResult> {
  await db.query(`TRUNCATE ${table}_empty`);
  const t0 = performance.now();
  await db.query('BEGIN');
  const rows = await copyFile(db, `${table}_empty`, file);
  await db.query('COMMIT');
  return { rows, durationMs: performance.now() - t0 };
}
