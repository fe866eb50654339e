/**
 * Lineage of appended rows (docs/loaded-tables.md "Lineage of appended rows"): every row an append run loads carries
 * the run's key in `_etl_run_key` and its load time in `_etl_loaded_at`, so that one run's rows can be found and
 * removed again (`report-etl revert`). The values never travel with the rows: both columns have a DEFAULT that
 * PostgreSQL fills in for every row COPY or INSERT writes without them — the run key from a setting local to the load
 * transaction (read by the STABLE `etl.load_run_key()` for every row: 10-12 % more of COPY's CPU than a constant
 * folded once per statement, bench/append-lineage.ts), the load time from `now()`, the transaction's start (one load
 * time per run). COPY's column list stays the report's, in text and binary format alike, and the staging plans'
 * INSERT … SELECT get the same defaults. Neither expression is VOLATILE: a volatile default (clock_timestamp(), a
 * sequence) would make COPY insert row by row instead of in batches.
 *
 * A report column can never be called like these: normalised names (identifiers.ts) start with a letter, or with `_`
 * and a digit.
 */
import type pg from 'pg';
import { EtlError } from '../errors.ts';
import type { Queryable } from '../db.ts';
import type { TableName } from './identifiers.ts';
import { addDefaultedColumns, type DefaultedColumn } from './target-table.ts';

/** The lineage columns' names. */
export const LINEAGE = { runKey: '_etl_run_key', loadedAt: '_etl_loaded_at' } as const;

/** The transaction-local setting the run key column's DEFAULT reads. */
export const RUN_KEY_SETTING = 'report_etl.run_key';

/**
 * The columns, their types and DEFAULTs. `etl.load_run_key()` (migrations/0009, 0018) reads {@link RUN_KEY_SETTING},
 * NULL outside an append load, so that rows written otherwise (by hand, by a load in another write mode) get NULL.
 */
const COLUMNS: readonly DefaultedColumn[] = [
  { name: LINEAGE.runKey, type: 'text', default: 'etl.load_run_key()' },
  { name: LINEAGE.loadedAt, type: 'timestamp with time zone', default: 'now()' },
].map((c) => ({
  ...c,
  // pg_get_expr leaves out the schema when etl is on the session's search_path.
  hasDefault: (found: string | null) => found?.replace(/^etl\./, '') === c.default.replace(/^etl\./, ''),
}));

/** Whether a column of a target is one of the lineage columns. */
export function isLineageColumn(name: string): boolean {
  return name === LINEAGE.runKey || name === LINEAGE.loadedAt;
}

/**
 * Starts the lineage of an append load inside its load transaction: sets the run key for the column DEFAULT, and,
 * when the target exists, gives it the lineage columns it lacks (its older rows keep NULL in them) and their
 * DEFAULTs. A target the load creates gets them from {@link addLineageColumns} once it exists.
 * @param exists whether the target exists now
 * @throws EtlError TARGET_INVALID when the target has a column of that name with another type
 */
export async function startLineage(
  tx: pg.PoolClient,
  target: TableName,
  runKey: string,
  exists: boolean,
): Promise<void> {
  await tx.query(`SELECT set_config('${RUN_KEY_SETTING}', $1, true)`, [runKey]);
  if (exists) await addLineageColumns(tx, target);
}

/**
 * Gives the target the lineage columns and DEFAULTs it lacks (the first append after this feature, or a table
 * report-etl just created; target-table.ts addDefaultedColumns): rows already there keep NULL.
 * @throws EtlError TARGET_INVALID when the target has a column of that name with another type
 */
export async function addLineageColumns(db: Queryable, target: TableName): Promise<void> {
  await addDefaultedColumns(
    db,
    target,
    COLUMNS,
    (c, type) =>
      new EtlError(
        'TARGET_INVALID',
        `column ${c.name} of ${target.schema}.${target.table} is ${type}; report-etl keeps the lineage of ` +
          `appended rows in it as ${c.type} (docs/loaded-tables.md "Lineage of appended rows"): ` +
          'rename or drop that column',
        { stage: 'load', retryable: false, details: { column: c.name, type } },
      ),
  );
}
