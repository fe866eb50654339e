/**
 * One report's rows into PostgreSQL, atomically: a single COPY FROM STDIN (pg-copy-streams) fed with backpressure
 * by a {@link RowSource}, inside the load transaction of the target ({@link withLoadTransaction}), which the caller
 * commits together with its own records (the run history). A failure anywhere rolls the whole transaction back, so
 * the target stays exactly as it was.
 *
 * Plans, chosen once the source has told the report's columns:
 * - direct: the target exists with every report column, mode replace or append → `DELETE` (replace) then COPY
 *   straight into the target. Inside the uncommitted transaction the new rows are invisible to readers, who keep
 *   seeing the old rows until the commit — a staging table's guarantee without copying every row twice.
 * - typed staging: merge into an existing target → COPY into a temporary table shaped like the target, then upsert.
 * - inference staging: the target is new or lacks report columns → COPY into a temporary table of text columns while
 *   the source records the kinds of every value of the whole report; then the target is created or extended with
 *   declared, existing or inferred types, and the rows are cast into it.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import pgCopyStreams from 'pg-copy-streams';
import { releaseClient } from '../db.ts';
import { EtlError, isConnectionLoss } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { WriteMode } from '../vocabulary.ts';
import { inferColumnType } from './column-types.ts';
import { normaliseColumnNames, quoteIdent, quoteTable, type TableName } from './identifiers.ts';
import { databaseError, mapCopyError, RowCountMismatchError, type LoadPlace } from './load-errors.ts';
import type { RowSource } from './row-source.ts';
import { applyFromStaging, createStaging, STAGING } from './staging.ts';
import { addColumns, createTable, describeTable, ensureSchema, lockTarget, type TargetColumn } from './target-table.ts';

/** How the rows reached the target. */
export type LoadPlan = 'direct' | 'typed-staging' | 'inference-staging' | 'empty';

/** Where and how a report's rows are loaded. */
export interface LoadSpec {
  target: TableName;
  mode: WriteMode;
  /** Merge key columns (normalised names). */
  key: readonly string[];
  /** Declared types by normalised column name, already resolved with to_regtype. */
  declaredTypes: ReadonlyMap<string, string>;
  /**
   * Rows the server said the report has (the report job's rows=); any other count fails the load. Undefined for the
   * output types whose rows are not report rows (lines, documents), where the caller checks the page count instead.
   */
  expectedRows: number | undefined;
  logger: Logger;
}

/** What a load did. */
export interface LoadResult {
  plan: LoadPlan;
  /** Rows COPY took in (equal to the server's rows=, or the load failed). */
  rows: number;
  columns: TargetColumn[];
}

/**
 * Runs `fn` inside the load transaction of `target` on a client of `pool`: the target's schema exists (created
 * outside the transaction, see ensureSchema), the session reads timestamps without offset in `timezone` with
 * DateStyle ISO, DMY (txt), and loads into the same target are serialised until the transaction ends.
 * @param fn does the load and the caller's records on `tx`; returns whether to commit
 * @returns whether the transaction was committed (false: `fn` asked for a rollback)
 * @throws whatever `fn` throws, after ROLLBACK
 */
export async function withLoadTransaction(pool: pg.Pool, o: { target: TableName; timezone: string }, fn: (tx: pg.PoolClient) => Promise<boolean>): Promise<boolean> {
  const db = await pool.connect();
  let broken = false;
  try {
    await ensureSchema(db, o.target.schema);
    await db.query('BEGIN');
    try {
      await db.query(`SELECT set_config('DateStyle', 'ISO, DMY', true), set_config('TimeZone', $1, true)`, [o.timezone]);
      await lockTarget(db, o.target);
      const commit = await fn(db);
      await db.query(commit ? 'COMMIT' : 'ROLLBACK');
      return commit;
    } catch (err) {
      await db.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  } catch (err) {
    broken = isConnectionLoss(err) || isConnectionLoss((err as { cause?: unknown }).cause);
    throw err;
  } finally {
    releaseClient(db, broken);
  }
}

/**
 * Loads a report's rows into the target in its write mode, inside the caller's load transaction.
 * @param tx the client of {@link withLoadTransaction}
 * @throws RowCountMismatchError when COPY took in a different number of rows than `spec.expectedRows`
 * @throws ValueDoesNotFitError naming column, page, row and value
 * @throws EtlError TARGET_INVALID (merge key missing, target is a view, ...), DATABASE, or whatever the source
 *   throws (fetch and parse errors, AbortedError)
 */
export async function loadRows(tx: pg.PoolClient, spec: LoadSpec, source: RowSource): Promise<LoadResult> {
  const reportColumns = await source.open();
  let existing = await describeTable(tx, spec.target);
  if (source.fixedColumns) existing = await ensureFixedTable(tx, spec, existing, source.fixedColumns);
  if (!reportColumns) return loadEmpty(tx, spec, existing);
  const names = normaliseColumnNames(reportColumns);
  const tableName = `${spec.target.schema}.${spec.target.table}`;
  for (const k of spec.key) {
    if (!names.includes(k)) {
      throw new EtlError('TARGET_INVALID', `merge key column ${k} is not a column of the report (report columns: ${names.join(', ')})`, {
        stage: 'load',
        retryable: false,
      });
    }
  }
  const existingType = new Map((existing ?? []).map((c) => [c.name, c.type]));
  const complete = existing !== undefined && names.every((n) => existingType.has(n));
  const plan: LoadPlan = complete ? (spec.mode === 'merge' ? 'typed-staging' : 'direct') : 'inference-staging';
  const types = new Map<string, string>();
  const place: LoadPlace = {
    table: tableName,
    pageOfRow: (row) => source.pageOfRow(row),
    reportColumn: (c) => reportColumns[names.indexOf(c)],
    columnType: (c) => types.get(c) ?? existingType.get(c),
  };

  let copyInto: string;
  if (plan === 'direct') {
    if (spec.mode === 'replace') await tx.query(`DELETE FROM ${quoteTable(spec.target)}`);
    copyInto = quoteTable(spec.target);
  } else {
    await createStaging(tx, names.map((n) => ({ name: n, type: plan === 'typed-staging' ? existingType.get(n)! : 'text' })));
    copyInto = STAGING;
  }
  spec.logger.info({ plan, table: tableName, columns: names.length }, 'loading');
  const format = source.copyFormat === 'csv' ? 'csv' : 'text';
  const copy = tx.query(pgCopyStreams.from(`COPY ${copyInto} (${names.map(quoteIdent).join(', ')}) FROM STDIN WITH (FORMAT ${format})`));
  try {
    await pipeline(Readable.from(source.rows(plan === 'inference-staging'), { objectMode: false }), copy);
  } catch (err) {
    throw mapCopyError(err, place);
  }
  const rows = copy.rowCount;
  if (spec.expectedRows !== undefined && rows !== spec.expectedRows) throw new RowCountMismatchError(spec.expectedRows, rows);

  if (plan === 'direct') return { plan, rows, columns: names.map((n) => ({ name: n, type: existingType.get(n)! })) };

  const kinds = source.kinds();
  for (const [i, n] of names.entries()) {
    types.set(n, existingType.get(n) ?? spec.declaredTypes.get(n) ?? inferColumnType(kinds[i] ?? 0));
  }
  const columns = names.map((n) => ({ name: n, type: types.get(n)! }));
  try {
    if (!existing) await createTable(tx, spec.target, columns, spec.mode === 'merge' ? spec.key : []);
    else await addColumns(tx, spec.target, columns.filter((c) => !existingType.has(c.name)));
  } catch (err) {
    throw databaseError(err, 'load');
  }
  await applyFromStaging(tx, { target: spec.target, mode: spec.mode, key: spec.key, columns, cast: plan === 'inference-staging', place }).catch((err: unknown) => {
    throw databaseError(err, 'load');
  });
  return { plan, rows, columns };
}

/**
 * The target of an output type with a fixed shape: created with exactly those columns when it does not exist (a
 * bytea column stored EXTERNAL: documents are compressed already, and a download reads slices of it), extended by
 * the missing ones otherwise.
 * @returns the target's columns afterwards
 */
async function ensureFixedTable(tx: pg.PoolClient, spec: LoadSpec, existing: TargetColumn[] | undefined, fixed: readonly TargetColumn[]): Promise<TargetColumn[]> {
  try {
    if (!existing) {
      await createTable(tx, spec.target, fixed, spec.mode === 'merge' ? spec.key : []);
      for (const c of fixed) {
        if (c.type === 'bytea') await tx.query(`ALTER TABLE ${quoteTable(spec.target)} ALTER COLUMN ${quoteIdent(c.name)} SET STORAGE EXTERNAL`);
      }
      return [...fixed];
    }
    const have = new Set(existing.map((c) => c.name));
    const missing = fixed.filter((c) => !have.has(c.name));
    if (missing.length === 0) return existing;
    await addColumns(tx, spec.target, missing);
    return [...existing, ...missing];
  } catch (err) {
    throw databaseError(err, 'load');
  }
}

/** A report with no rows and no header: replace empties an existing target; nothing to create. */
async function loadEmpty(tx: pg.PoolClient, spec: LoadSpec, existing: TargetColumn[] | undefined): Promise<LoadResult> {
  if (spec.expectedRows !== undefined && spec.expectedRows !== 0) throw new RowCountMismatchError(spec.expectedRows, 0);
  if (existing && spec.mode === 'replace') await tx.query(`DELETE FROM ${quoteTable(spec.target)}`);
  if (!existing) spec.logger.warn({ table: `${spec.target.schema}.${spec.target.table}` }, 'report has no rows and no columns: target not created');
  return { plan: 'empty', rows: 0, columns: existing ?? [] };
}
