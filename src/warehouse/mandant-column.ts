/**
 * The mandant column of a job with many mandants (docs/loaded-tables.md "Many mandants"): every row a mandant's run
 * loads carries the mandant in an integer column of the target (`mandant`, or `target.mandantColumn`), and the run's
 * write mode acts on that mandant's rows alone: replace deletes them (or those of its range), the guard counts them,
 * merge keys include the column. As with lineage (lineage.ts) the value never travels with the rows: the column's
 * DEFAULT reads a setting local to the load transaction, so COPY and the staging plans' INSERT carry the report's
 * columns only. The expression is STABLE (current_setting), so COPY still inserts in batches; outside a mandant's load
 * it gives NULL.
 */
import type pg from 'pg';
import { EtlError } from '../errors.ts';
import type { Queryable } from '../db.ts';
import type { WriteMode } from '../vocabulary.ts';
import { quoteIdent, quoteTable, type TableName } from './identifiers.ts';
import { addDefaultedColumns, columnTypeOf, type DefaultedColumn } from './target-table.ts';

/** The mandant of a load and the target column holding it. */
export interface MandantScope {
  column: string;
  value: number;
}

/** The transaction-local setting the mandant column's DEFAULT reads. */
export const MANDANT_SETTING = 'report_etl.mandant';

/** The mandant column's type as format_type spells it. */
const MANDANT_TYPE = 'integer';

/** The SQL condition "the row is the mandant's", the mandant as parameter `$n`. */
export function mandantCondition(scope: MandantScope, n: number): string {
  return `${quoteIdent(scope.column)} = $${n}`;
}

/**
 * Starts a mandant's load inside its load transaction: sets the mandant for the column DEFAULT and, when the target
 * exists, gives it the mandant column (rows already there keep NULL) and its DEFAULT. A target the load creates gets
 * the column with its key ({@link withMandantColumn}) and the DEFAULT from {@link addMandantColumn} once it exists.
 * A replace or merge target that holds rows but no mandant column (loaded while the job had one mandant) is refused:
 * no mandant's run would ever replace those rows, so they would stay beside the new ones (docs/loaded-tables.md
 * "Many mandants"); append keeps them, as the history they are.
 * @param o the load's write mode and the job named in the error
 * @throws EtlError TARGET_INVALID when the target has a column of that name of another type, or holds rows without
 *   the column in mode replace or merge
 */
export async function startMandant(
  tx: pg.PoolClient,
  target: TableName,
  scope: MandantScope,
  exists: boolean,
  o: { mode: WriteMode; job?: string | undefined },
): Promise<void> {
  await tx.query(`SELECT set_config('${MANDANT_SETTING}', $1, true)`, [String(scope.value)]);
  if (!exists) return;
  if (o.mode !== 'append') await refuseRowsWithoutMandant(tx, target, scope, o.job);
  await addMandantColumn(tx, target, scope);
}

/**
 * Refuses a target that lacks the mandant column but holds rows: they could not be told apart by mandant.
 * @throws EtlError TARGET_INVALID naming the table, the column and the statements that give the rows their mandant
 */
async function refuseRowsWithoutMandant(
  tx: pg.PoolClient,
  target: TableName,
  scope: MandantScope,
  job: string | undefined,
): Promise<void> {
  if ((await columnTypeOf(tx, target, scope.column)) !== undefined) return;
  const table = quoteTable(target);
  const { rows } = await tx.query<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${table}) AS any`);
  if (!rows[0]!.any) return;
  const name = `${target.schema}.${target.table}`;
  const column = quoteIdent(scope.column);
  throw new EtlError(
    'TARGET_INVALID',
    `${job === undefined ? '' : `job ${job}: `}${name} holds rows but no column ${scope.column}, loaded before the ` +
      "job had a list of mandants: each mandant's run replaces its own rows alone, so these would stay beside the " +
      `new ones for good. Give them their mandant first (ALTER TABLE ${table} ADD COLUMN ${column} integer; ` +
      `UPDATE ${table} SET ${column} = ${scope.value}; with the mandant they are of), or empty the table, then run ` +
      `again (docs/loaded-tables.md "Many mandants"); ${name} is left as it was`,
    { stage: 'load', retryable: false, details: { column: scope.column, table: name } },
  );
}

/**
 * Gives the target the mandant column and its DEFAULT when it lacks them (target-table.ts addDefaultedColumns): rows
 * already there stay NULL rather than taking this run's mandant. The DEFAULT is the setting as an integer, NULL when
 * unset (also after a load: '' then).
 * @throws EtlError TARGET_INVALID when the target has a column of that name of another type
 */
export async function addMandantColumn(db: Queryable, target: TableName, scope: MandantScope): Promise<void> {
  const column: DefaultedColumn = {
    name: scope.column,
    type: MANDANT_TYPE,
    default: `NULLIF(current_setting('${MANDANT_SETTING}', true), '')::integer`,
    hasDefault: (found) => !!found?.includes(MANDANT_SETTING),
  };
  await addDefaultedColumns(
    db,
    target,
    [column],
    (_, type) =>
      new EtlError(
        'TARGET_INVALID',
        `column ${scope.column} of ${target.schema}.${target.table} is ${type}; report-etl keeps the mandant of ` +
          `each row of a job with many mandants in it as ${MANDANT_TYPE} (docs/loaded-tables.md "Many mandants"): ` +
          'set target.mandantColumn to another name, or rename or drop that column',
        { stage: 'load', retryable: false, details: { column: scope.column, type } },
      ),
  );
}

/**
 * The columns and key a new target is created with: the report's, the mandant column, and a merge key that includes
 * it (each mandant's rows have their own keys).
 */
export function withMandantColumn<C extends { name: string; type: string }>(
  columns: readonly C[],
  key: readonly string[],
  scope: MandantScope | undefined,
): { columns: (C | { name: string; type: string })[]; key: string[] } {
  if (!scope) return { columns: [...columns], key: [...key] };
  return {
    columns: [...columns, { name: scope.column, type: MANDANT_TYPE }],
    key: key.length > 0 ? [...key, scope.column] : [],
  };
}

/**
 * Refuses a report with a column of the mandant column's name, before anything is loaded: its values and the
 * mandant's could not both be kept.
 * @throws EtlError CONFIG_INVALID naming the job, the column and the setting to change
 */
export function checkMandantClash(
  job: string | undefined,
  names: readonly string[],
  reportColumns: readonly string[],
  scope: MandantScope | undefined,
): void {
  if (!scope) return;
  const at = names.indexOf(scope.column);
  if (at < 0) return;
  throw new EtlError(
    'CONFIG_INVALID',
    `${job === undefined ? '' : `job ${job}: `}the report has a column "${reportColumns[at]}" (loaded as ` +
      `${scope.column}), the name of the column that holds each row's mandant: set target.mandantColumn to another ` +
      'name, e.g. mandant_nr (docs/loaded-tables.md "Many mandants"); nothing was loaded',
    { stage: 'load', retryable: false, details: { column: scope.column, reportColumn: reportColumns[at] } },
  );
}
