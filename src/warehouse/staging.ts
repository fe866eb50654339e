/**
 * The staging table of a run and the write modes applied from it (replace, append, merge). Only used when the
 * rows need a second step: merge, the first run into a new target (types inferred over the whole report), or a
 * report with new columns. Plain replace/append loads into an existing target COPY straight into it inside the
 * run's transaction (see copy-load.ts), which MVCC keeps invisible until the commit just as a staging table would.
 */
import type pg from 'pg';
import type { WriteMode } from '../vocabulary.ts';
import { EtlError } from '../errors.ts';
import { quoteIdent, quoteTable, type TableName } from './identifiers.ts';
import {
  columnText,
  isValueError,
  placeOfRow,
  rowPlaceText,
  ValueDoesNotFitError,
  type LoadPlace,
} from './load-errors.ts';
import { checkRangeBounds, checkStagedRange, deleteRange, type ReplaceRange } from './replace-range.ts';
import { mandantCondition, type MandantScope } from './mandant-column.ts';

/** Name of the per-transaction staging table (a temporary table dropped at commit or rollback). */
export const STAGING = 'report_etl_staging';
/** Column that keeps COPY order, so "last row wins" in merge and errors can name the row. */
export const SEQ = '_report_etl_seq';

/**
 * Creates the staging table: `columns` with the given types (text for inference), plus the order column.
 */
export async function createStaging(
  db: pg.PoolClient,
  columns: readonly { name: string; type: string }[],
): Promise<void> {
  const defs = columns.map((c) => `${quoteIdent(c.name)} ${c.type}`);
  await db.query(
    `CREATE TEMP TABLE ${STAGING} (${SEQ} bigint GENERATED ALWAYS AS IDENTITY, ${defs.join(', ')}) ON COMMIT DROP`,
  );
}

/** Options of {@link applyFromStaging}. */
export interface ApplyOptions {
  target: TableName;
  mode: WriteMode;
  key: readonly string[];
  /** Columns of the run: name and the target type each staging value is cast to. */
  columns: readonly { name: string; type: string }[];
  /** Whether the staging columns are text that must be cast (inference path) or already typed. */
  cast: boolean;
  /** replace only: the period whose rows are replaced (replace-range.ts); unset: every row. */
  range?: ReplaceRange | undefined;
  /** A job with many mandants: replace deletes the mandant's rows alone, merge keys include its column. */
  mandant?: MandantScope | undefined;
  place: LoadPlace;
}

/**
 * Moves the staged rows into the target in the job's write mode. Replace deletes the old rows first (readers keep
 * seeing them until commit), with a range only those in it once every staged row is found in it; merge keeps, per
 * key, the last staged row and upserts it (`ON CONFLICT`).
 * @throws ValueDoesNotFitError naming column, page, row and value when a cast fails
 * @throws EtlError TARGET_INVALID when merge finds NULL keys or the target lacks a unique key on `key`;
 *   RangeViolationError for a staged row outside the range; EtlError CONFIG_INVALID for a bound the column cannot read
 */
export async function applyFromStaging(db: pg.PoolClient, o: ApplyOptions): Promise<number> {
  const target = quoteTable(o.target);
  const cols = o.columns.map((c) => quoteIdent(c.name));
  // Cast the staged text to the base type only (varchar, numeric): an explicit cast to varchar(3) would cut a
  // longer value short without a word, while the assignment into the target column refuses it.
  const base = o.cast ? await baseTypes(db, o.columns) : [];
  const exprs = o.columns.map((c, i) => (o.cast ? `${quoteIdent(c.name)}::${base[i]}` : quoteIdent(c.name)));
  if (o.mode === 'merge') await checkKeys(db, o);
  const range = o.mode === 'replace' ? o.range : undefined;
  const rangeAt = range ? o.columns.findIndex((c) => c.name === range.column) : -1;
  if (range && rangeAt >= 0) await checkRangeBounds(db, range, o.columns[rangeAt]!.type);
  await db.query('SAVEPOINT report_etl_apply');
  try {
    if (range) {
      // checkTargetNames refused a report without the range column before anything was loaded.
      if (rangeAt < 0) throw new Error(`the range column ${range.column} is not a column of the run`);
      await checkStagedRange(db, range, { table: STAGING, seq: SEQ, expr: exprs[rangeAt]! }, o.place, o.mandant);
      await deleteRange(db, o.target, range, o.mandant);
    } else if (o.mode === 'replace' && o.mandant)
      await db.query(`DELETE FROM ${target} WHERE ${mandantCondition(o.mandant, 1)}`, [o.mandant.value]);
    else if (o.mode === 'replace') await db.query(`DELETE FROM ${target}`);
    let sql: string;
    if (o.mode === 'merge') {
      const keys = o.key.map(quoteIdent);
      // A mandant's rows are one mandant's: its column completes the key of the conflict (its DEFAULT fills it).
      const conflict = o.mandant ? [...keys, quoteIdent(o.mandant.column)] : keys;
      const updates = o.columns
        .filter((c) => !o.key.includes(c.name))
        .map((c) => `${quoteIdent(c.name)} = EXCLUDED.${quoteIdent(c.name)}`);
      sql =
        `INSERT INTO ${target} (${cols.join(', ')}) ` +
        `SELECT ${cols.join(', ')} FROM (SELECT DISTINCT ON (${keys.join(', ')}) ${cols.join(', ')} FROM ` +
        `(SELECT ${exprs.map((e, i) => `${e} AS ${cols[i]}`).join(', ')}, ${SEQ} FROM ${STAGING}) s ` +
        `ORDER BY ${keys.join(', ')}, ${SEQ} DESC) d ` +
        `ON CONFLICT (${conflict.join(', ')}) DO ${updates.length ? `UPDATE SET ${updates.join(', ')}` : 'NOTHING'}`;
    } else {
      sql = `INSERT INTO ${target} (${cols.join(', ')}) SELECT ${exprs.join(', ')} FROM ${STAGING} ORDER BY ${SEQ}`;
    }
    const res = await db.query(sql);
    await db.query('RELEASE SAVEPOINT report_etl_apply');
    return res.rowCount ?? 0;
  } catch (err) {
    await db.query('ROLLBACK TO SAVEPOINT report_etl_apply');
    const code = (err as { code?: string }).code;
    if (code === '42P10') {
      const key = o.mandant ? [...o.key, o.mandant.column] : o.key;
      throw new EtlError(
        'TARGET_INVALID',
        `merge into ${o.target.schema}.${o.target.table} needs a primary key or unique ` +
          `index on (${key.join(', ')}); ` +
          `add one: CREATE UNIQUE INDEX ON ${o.target.schema}.${o.target.table} (${key.join(', ')})`,
        { stage: 'load', retryable: false, cause: err },
      );
    }
    if (err instanceof EtlError) throw err;
    if (o.cast && isValueError(code)) throw await findBadValue(db, o, err);
    throw err;
  }
}

/** The columns' types without modifiers: `character varying(3)` → `character varying`, `numeric(6,2)` → `numeric`. */
async function baseTypes(db: pg.PoolClient, columns: readonly { type: string }[]): Promise<string[]> {
  const { rows } = await db.query<{ base: string }>(
    'SELECT to_regtype(t)::text AS base FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n',
    [columns.map((c) => c.type)],
  );
  return rows.map((r) => r.base);
}

/** Merge keys must be present in every row. */
async function checkKeys(db: pg.PoolClient, o: ApplyOptions): Promise<void> {
  for (const k of o.key) {
    const { rows } = await db.query<{ seq: string }>(
      `SELECT ${SEQ} AS seq FROM ${STAGING} WHERE ${quoteIdent(k)} IS NULL ORDER BY ${SEQ} LIMIT 1`,
    );
    if (rows[0]) {
      const row = Number(rows[0].seq);
      throw new EtlError(
        'TARGET_INVALID',
        `merge key column ${k} is empty in page ${o.place.pageOfRow(row)}, ` +
          `row ${row} of the run: every row needs a key`,
        { stage: 'load', retryable: false, details: { column: k, page: o.place.pageOfRow(row), row } },
      );
    }
  }
}

/** After a failed cast, finds the first staged value that does not fit its column (error path only). */
async function findBadValue(db: pg.PoolClient, o: ApplyOptions, cause: unknown): Promise<Error> {
  for (const c of o.columns) {
    if (c.type === 'text') continue;
    const { rows } = await db.query<{ seq: string; value: string | null }>(
      `SELECT ${SEQ} AS seq, ${quoteIdent(c.name)} AS value FROM ${STAGING}
        WHERE NOT etl.fits_type(${quoteIdent(c.name)}, $1) ORDER BY ${SEQ} LIMIT 1`,
      [c.type],
    );
    const bad = rows[0];
    if (bad) {
      const at = placeOfRow(o.place, Number(bad.seq));
      const reportCol = o.place.reportColumn(c.name);
      return new ValueDoesNotFitError(
        `value "${bad.value}" does not fit ${columnText(o.place.table, c.name, reportCol, c.type)}, ` +
          `${rowPlaceText(at)}: ${(cause as Error).message}`,
        { column: c.name, reportColumn: reportCol, ...at, value: bad.value, type: c.type },
        cause,
      );
    }
  }
  return cause as Error;
}
