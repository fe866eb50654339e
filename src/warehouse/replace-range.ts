/**
 * Replacing one period (docs/loaded-tables.md "Replacing one period"): with `target.replaceRange` a replace deletes
 * only the target's rows whose range column lies in [from, to) and inserts the run's rows, in the load transaction, so
 * that readers see the old period until the commit and the new one after it, never a half-replaced one. Every row of
 * the run must lie in the range: one outside it would survive the next run's delete as a duplicate, so it fails the run
 * (RANGE_VIOLATION) before the target is touched. Bounds are compared as the column's type (date, timestamptz, text …),
 * in the load transaction's TimeZone, the connection's: a bound without offset, rendered in the job's zone, is read on
 * the ERP's clock as the ERP reads the same text in the report's parameters, so that the period replaced is the one the
 * report returned (docs/loaded-tables.md "Bounds and time zones").
 */
import type pg from 'pg';
import { EtlError } from '../errors.ts';
import { quoteIdent, quoteTable, type TableName } from './identifiers.ts';
import type { LoadPlace } from './load-errors.ts';
import { mandantCondition, type MandantScope } from './mandant-column.ts';
import { columnTypeOf, targetExists } from './target-table.ts';

/** A run's range: the normalised column and its rendered bounds, from inclusive, to exclusive. */
export interface ReplaceRange {
  column: string;
  from: string;
  to: string;
}

/** `[from, to)` as messages write it. */
export function describeRange(r: ReplaceRange): string {
  return `${r.column} in [${r.from}, ${r.to})`;
}

/** The SQL condition "`expr` lies in the range", with the bounds as $1 and $2 (typed like `expr` by PostgreSQL). */
function inRange(expr: string): string {
  return `(${expr} >= $1 AND ${expr} < $2)`;
}

/** ` AND <the mandant's rows>` with the mandant as $3, for a job with many mandants; else nothing. */
function ofMandant(mandant: MandantScope | undefined): string {
  return mandant ? ` AND ${mandantCondition(mandant, 3)}` : '';
}

/** A run whose row lies outside its range: not retryable (the same report gives the same row), nothing loaded. */
export class RangeViolationError extends EtlError {
  constructor(message: string, details: Record<string, unknown>) {
    super('RANGE_VIOLATION', message, { stage: 'load', retryable: false, details });
    this.name = 'RangeViolationError';
  }
}

/**
 * Checks that both bounds read as `type`, under a savepoint so that the load transaction stays usable.
 * @throws EtlError CONFIG_INVALID naming the bound, its value and the column's type
 */
export async function checkRangeBounds(db: pg.PoolClient, r: ReplaceRange, type: string): Promise<void> {
  for (const bound of ['from', 'to'] as const) {
    await db.query('SAVEPOINT report_etl_range');
    try {
      await db.query(`SELECT $1::${type}`, [r[bound]]);
      await db.query('RELEASE SAVEPOINT report_etl_range');
    } catch (err) {
      await db.query('ROLLBACK TO SAVEPOINT report_etl_range');
      throw new EtlError(
        'CONFIG_INVALID',
        `target.replaceRange.${bound} rendered "${r[bound]}", which is not a value of column ${r.column} (type ` +
          `${type}): give the template a format the type reads, e.g. "%{logicalEnd:yyyy-MM-dd}" for a date; ` +
          'nothing was loaded',
        { stage: 'load', retryable: false, cause: err, details: { bound, value: r[bound], column: r.column, type } },
      );
    }
  }
}

/**
 * The target's rows in the range now (what a replace of the range removes; with `mandant`, the mandant's), 0 when
 * the target or its range column does not exist yet; undefined when the target does not exist.
 * @throws EtlError CONFIG_INVALID when a bound is not a value of the column's type
 */
export async function countRangeRows(
  db: pg.PoolClient,
  target: TableName,
  r: ReplaceRange,
  mandant?: MandantScope,
): Promise<number | undefined> {
  if (!(await targetExists(db, target))) return undefined;
  const type = await columnTypeOf(db, target, r.column);
  if (type === undefined) return 0;
  if (mandant && (await columnTypeOf(db, target, mandant.column)) === undefined) return 0;
  await checkRangeBounds(db, r, type);
  const { rows } = await db.query<{ n: string }>(
    `SELECT count(*) AS n FROM ${quoteTable(target)} WHERE ${inRange(quoteIdent(r.column))}${ofMandant(mandant)}`,
    mandant ? [r.from, r.to, mandant.value] : [r.from, r.to],
  );
  return Number(rows[0]!.n);
}

/**
 * Deletes the target's rows in the range (none when it lacks the range column); with `mandant`, that mandant's alone.
 * @returns the rows deleted
 */
export async function deleteRange(
  db: pg.PoolClient,
  target: TableName,
  r: ReplaceRange,
  mandant?: MandantScope,
): Promise<number> {
  const type = await columnTypeOf(db, target, r.column);
  if (type === undefined) return 0;
  await checkRangeBounds(db, r, type);
  const res = await db.query(
    `DELETE FROM ${quoteTable(target)} WHERE ${inRange(quoteIdent(r.column))}${ofMandant(mandant)}`,
    mandant ? [r.from, r.to, mandant.value] : [r.from, r.to],
  );
  return res.rowCount ?? 0;
}

/**
 * Checks that every staged row lies in the range, reading the range column as `expr` (its cast to the target's type
 * on the inference path).
 * @param staging the staging table, and its order column that numbers the run's rows
 * @param mandant the run's mandant, for a job with many mandants: the message names it
 * @throws RangeViolationError naming the first row outside the range: its page, row and value, and the mandant
 */
export async function checkStagedRange(
  db: pg.PoolClient,
  r: ReplaceRange,
  staging: { table: string; seq: string; expr: string },
  place: LoadPlace,
  mandant?: MandantScope,
): Promise<void> {
  const { rows } = await db.query<{ seq: string; value: string | null }>(
    `SELECT ${staging.seq} AS seq, (${staging.expr})::text AS value FROM ${staging.table}
      WHERE ${inRange(staging.expr)} IS NOT TRUE ORDER BY ${staging.seq} LIMIT 1`,
    [r.from, r.to],
  );
  const bad = rows[0];
  if (!bad) return;
  const row = Number(bad.seq);
  const page = place.pageOfRow(row);
  const reportColumn = place.reportColumn(r.column);
  const shown = bad.value === null ? 'empty' : `"${bad.value}"`;
  const ofMandantText = mandant ? ` of mandant ${mandant.value}` : '';
  throw new RangeViolationError(
    `page ${page}, row ${row} of the run${ofMandantText} has ${r.column}` +
      `${reportColumn && reportColumn !== r.column ? ` (report column "${reportColumn}")` : ''} ${shown}, outside ` +
      `the run's range [${r.from}, ${r.to}) of target.replaceRange: ${place.table} is left as it was. A row outside ` +
      "the range would not be replaced by the next run's: widen the range (from, to) or make the report's " +
      'parameters ask for the same period',
    {
      column: r.column,
      reportColumn,
      page,
      row,
      value: bad.value,
      from: r.from,
      to: r.to,
      table: place.table,
      ...(mandant ? { mandant: mandant.value } : {}),
    },
  );
}
