/**
 * One run's rows into PostgreSQL, atomically: a single COPY FROM STDIN (pg-copy-streams) fed with backpressure by
 * the page decoder, inside one transaction that also records the run as succeeded. A failure anywhere rolls the
 * whole transaction back, so the target stays exactly as it was.
 *
 * Plans, chosen once the first page tells the report's columns:
 * - direct: the target exists with every report column, mode replace or append → `DELETE` (replace) then COPY
 *   straight into the target. Inside the uncommitted transaction the new rows are invisible to readers, who keep
 *   seeing the old rows until the commit — a staging table's guarantee without copying every row twice.
 * - typed staging: merge into an existing target → COPY into a temporary table shaped like the target, then upsert.
 * - inference staging: the target is new or lacks report columns → COPY into a temporary table of text columns while
 *   the decoder records the kinds of every value of the whole report; then the target is created or extended with
 *   declared, existing or inferred types, and the rows are cast into it.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import pgCopyStreams from 'pg-copy-streams';
import type { WriteMode } from '../vocabulary.ts';
import type { PageDecoder } from '../pages/decoder.ts';
import { EtlError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { inferColumnType } from './column-types.ts';
import { normaliseColumnNames, quoteIdent, quoteTable, type TableName } from './identifiers.ts';
import { databaseError, mapCopyError, RowCountMismatchError, type LoadPlace } from './load-errors.ts';
import { applyFromStaging, createStaging, STAGING } from './staging.ts';
import { addColumns, createTable, describeTable, ensureSchema, lockTarget, type TargetColumn } from './target-table.ts';

/** How the rows reached the target. */
export type LoadPlan = 'direct' | 'typed-staging' | 'inference-staging' | 'empty';

/** Options of {@link loadReport}. */
export interface LoadOptions {
  /** A client checked out of the pool; loadReport runs BEGIN … COMMIT/ROLLBACK on it. */
  db: pg.PoolClient;
  target: TableName;
  mode: WriteMode;
  /** Merge key columns (normalised names). */
  key: readonly string[];
  /** Declared types by normalised column name, already resolved with to_regtype. */
  declaredTypes: ReadonlyMap<string, string>;
  /** The decoder the chunks come from: it knows the columns and the kinds of values. */
  decoder: PageDecoder;
  /** Whole rows in the decoder's COPY format, all pages in order; pulled with backpressure. */
  chunks: AsyncIterable<Buffer>;
  /** IANA zone for timestamps without offset (txt), set as the session's TimeZone. */
  timezone: string;
  /** Rows the server said the report has; read after the chunks are exhausted. */
  expectedRows(): number;
  /** 1-based row of the run → 1-based page, for error messages. */
  pageOfRow(row: number): number;
  /** Called inside the transaction before COMMIT (run history, append claim). Return false to roll back. */
  beforeCommit(db: pg.PoolClient, rows: number): Promise<boolean>;
  logger: Logger;
}

/** What a load did. */
export interface LoadResult {
  plan: LoadPlan;
  /** Rows COPY took in (equal to the server's rows=, or the load failed). */
  rows: number;
  columns: TargetColumn[];
  /** False when beforeCommit asked for a rollback (e.g. an append already committed by another attempt). */
  committed: boolean;
}

/**
 * Loads a report's rows into the target in its write mode, in one transaction.
 * @throws RowCountMismatchError when COPY took in a different number of rows than the server reported
 * @throws ValueDoesNotFitError naming column, page, row and value
 * @throws EtlError TARGET_INVALID (merge key missing, target is a view, ...), DATABASE, or whatever the chunks throw
 *   (fetch and parse errors, AbortedError); in every case the transaction is rolled back first
 */
export async function loadReport(o: LoadOptions): Promise<LoadResult> {
  const { db } = o;
  const iterator = o.chunks[Symbol.asyncIterator]();
  await ensureSchema(db, o.target.schema);
  await db.query('BEGIN');
  try {
    await db.query(`SELECT set_config('DateStyle', 'ISO, DMY', true), set_config('TimeZone', $1, true)`, [o.timezone]);
    await lockTarget(db, o.target);
    // Pull the first rows: after that the decoder knows the report's columns.
    const first = await iterator.next();
    const reportColumns = o.decoder.columns;
    const existing = await describeTable(db, o.target);
    let result: LoadResult;
    if (!reportColumns) {
      result = await loadEmpty(o, existing);
    } else {
      result = await loadRows(o, reportColumns, existing, first, iterator);
    }
    if (!(await o.beforeCommit(db, result.rows))) {
      await db.query('ROLLBACK');
      return { ...result, committed: false };
    }
    await db.query('COMMIT');
    return result;
  } catch (err) {
    await db.query('ROLLBACK').catch(() => undefined);
    await iterator.return?.().catch(() => undefined);
    throw err;
  }
}

/** A report with no rows and no header: replace empties an existing target; nothing to create. */
async function loadEmpty(o: LoadOptions, existing: TargetColumn[] | undefined): Promise<LoadResult> {
  const expected = o.expectedRows();
  if (expected !== 0) throw new RowCountMismatchError(expected, 0);
  if (existing && o.mode === 'replace') await o.db.query(`DELETE FROM ${quoteTable(o.target)}`);
  if (!existing) o.logger.warn({ table: `${o.target.schema}.${o.target.table}` }, 'report has no rows and no columns: target not created');
  return { plan: 'empty', rows: 0, columns: existing ?? [], committed: true };
}

async function loadRows(
  o: LoadOptions,
  reportColumns: readonly string[],
  existing: TargetColumn[] | undefined,
  first: IteratorResult<Buffer>,
  rest: AsyncIterator<Buffer>,
): Promise<LoadResult> {
  const names = normaliseColumnNames(reportColumns);
  const tableName = `${o.target.schema}.${o.target.table}`;
  for (const k of o.key) {
    if (!names.includes(k)) {
      throw new EtlError('TARGET_INVALID', `merge key column ${k} is not a column of the report (report columns: ${names.join(', ')})`, {
        stage: 'load',
        retryable: false,
      });
    }
  }
  const existingType = new Map((existing ?? []).map((c) => [c.name, c.type]));
  const complete = existing !== undefined && names.every((n) => existingType.has(n));
  const plan: LoadPlan = complete ? (o.mode === 'merge' ? 'typed-staging' : 'direct') : 'inference-staging';
  o.decoder.inspect = plan === 'inference-staging';
  const types = new Map<string, string>();
  const place: LoadPlace = {
    table: tableName,
    pageOfRow: o.pageOfRow,
    reportColumn: (c) => reportColumns[names.indexOf(c)],
    columnType: (c) => types.get(c) ?? existingType.get(c),
  };

  let copyInto: string;
  if (plan === 'direct') {
    if (o.mode === 'replace') await o.db.query(`DELETE FROM ${quoteTable(o.target)}`);
    copyInto = quoteTable(o.target);
  } else {
    await createStaging(o.db, names.map((n) => ({ name: n, type: plan === 'typed-staging' ? existingType.get(n)! : 'text' })));
    copyInto = STAGING;
  }
  o.logger.info({ plan, table: tableName, columns: names.length }, 'loading');
  const format = o.decoder.copyFormat === 'csv' ? 'csv' : 'text';
  const copy = o.db.query(pgCopyStreams.from(`COPY ${copyInto} (${names.map(quoteIdent).join(', ')}) FROM STDIN WITH (FORMAT ${format})`));
  async function* all(): AsyncGenerator<Buffer> {
    if (!first.done) yield first.value;
    for (let r = await rest.next(); !r.done; r = await rest.next()) yield r.value;
  }
  try {
    await pipeline(Readable.from(all(), { objectMode: false }), copy);
  } catch (err) {
    throw mapCopyError(err, place);
  }
  const rows = copy.rowCount;
  const expected = o.expectedRows();
  if (rows !== expected) throw new RowCountMismatchError(expected, rows);

  if (plan === 'direct') return { plan, rows, columns: names.map((n) => ({ name: n, type: existingType.get(n)! })), committed: true };

  for (const [i, n] of names.entries()) {
    types.set(n, existingType.get(n) ?? o.declaredTypes.get(n) ?? inferColumnType(o.decoder.kinds[i] ?? 0));
  }
  const columns = names.map((n) => ({ name: n, type: types.get(n)! }));
  try {
    if (!existing) await createTable(o.db, o.target, columns, o.mode === 'merge' ? o.key : []);
    else await addColumns(o.db, o.target, columns.filter((c) => !existingType.has(c.name)));
  } catch (err) {
    throw databaseError(err, 'load');
  }
  await applyFromStaging(o.db, { target: o.target, mode: o.mode, key: o.key, columns, cast: plan === 'inference-staging', place }).catch((err: unknown) => {
    throw databaseError(err, 'load');
  });
  return { plan, rows, columns, committed: true };
}
