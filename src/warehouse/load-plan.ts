/**
 * How a report's rows reach the target (docs/architecture.md "Flow of one run"), chosen once the source has told the
 * report's columns and before a row is read:
 * - direct: the target exists with every report column, mode replace or append → COPY straight into it (a replace
 *   DELETEs first; readers see the old rows until the commit, a staging table's guarantee without a second copy);
 * - typed staging: merge, or a replace of one period (replace-range.ts), into an existing target → COPY into a
 *   temporary table shaped like it, then upsert, or check the range and delete+insert;
 * - inference staging: the target is new or lacks report columns → COPY into text columns while the source records
 *   the kinds of every value; the target is then created or extended with declared, existing or inferred types.
 * COPY goes binary on the direct and typed-staging plans when every column has a binary encoding
 * (copy-binary/choose.ts), the source can write it and the report has at least {@link BINARY_MIN_ROWS} rows.
 */
import type pg from 'pg';
import { binaryChooser, type BinaryChooser } from '../copy-binary/choose.ts';
import type { BinaryEncoding } from '../copy-binary/format.ts';
import type { Logger } from '../logger.ts';
import type { SchemaChanges, WriteMode } from '../vocabulary.ts';
import { nameTargetColumns, type RecordedNames } from './column-names.ts';
import type { TableName } from './identifiers.ts';
import { SchemaChangedError, schemaDifference, valueChangeError, type LoadPlace } from './load-errors.ts';
import type { RowSource } from './row-source.ts';
import { checkTargetNames } from './target-names.ts';
import type { ReplaceRange } from './replace-range.ts';
import type { TargetColumn } from './target-table.ts';
import { ValueFit } from './value-fit.ts';
import { checkMandantClash, type MandantScope } from './mandant-column.ts';

/** How the rows reached the target. */
export type LoadPlan = 'direct' | 'typed-staging' | 'inference-staging' | 'empty';

/** Where and how a report's rows are loaded. */
export interface LoadSpec {
  /** The jobs.yaml job, named in errors about its target options. */
  job?: string | undefined;
  target: TableName;
  mode: WriteMode;
  /** Merge key columns (normalised names). */
  key: readonly string[];
  /** replace only: the period whose rows the run replaces (target.replaceRange, rendered); unset: the whole table. */
  range?: ReplaceRange | undefined;
  /** Declared types by normalised column name, resolved with to_regtype. */
  declaredTypes: ReadonlyMap<string, string>;
  /** evolve (default) adds new report columns; freeze fails with SCHEMA_CHANGED before a row is loaded. */
  schemaChanges?: SchemaChanges;
  /** The server's rows= (any other count fails); undefined where rows are not report rows (lines, documents). */
  expectedRows: number | undefined;
  /** The load session's TimeZone: the zone of timestamps written without offset. */
  timezone: string;
  /** Fewest `expectedRows` for COPY binary format, default {@link BINARY_MIN_ROWS}. */
  binaryMinRows?: number;
  logger: Logger;
  /**
   * A job with many mandants: the run's mandant and its target column (mandant-column.ts); the write mode acts on its
   * rows alone. Unset: the whole table.
   */
  mandant?: MandantScope | undefined;
  /** The run an append load tags its rows with (lineage.ts); other modes ignore it. */
  runKey?: string | undefined;
  /** Times the DELETE of a replaced target's rows, each COPY and the apply; default untimed. */
  timed?: TimeLoadStep | undefined;
}

/** Runs `fn` as load step `step`, timing it. */
export type TimeLoadStep = <T>(step: 'target_delete' | 'copy' | 'apply', fn: () => Promise<T>) => Promise<T>;

/** Fewest rows of a report loaded in COPY binary format (LoadSpec.binaryMinRows): below, text parsing costs less. */
export const BINARY_MIN_ROWS = 10_000;

/** One planned load, as its steps share it. */
export interface Load {
  tx: pg.PoolClient;
  spec: LoadSpec;
  source: RowSource;
  plan: Exclude<LoadPlan, 'empty'>;
  /** The report's column names as sent, and the target columns they load into (column-names.ts), in COPY order. */
  reportColumns: readonly string[];
  names: string[];
  /** (report column, target column) pairs to record with the target once it has them. */
  toRecord: [string, string][];
  /** The target's columns now (empty when it does not exist), and whether it exists. */
  existingType: Map<string, string>;
  exists: boolean;
  /** The types the target's new columns get (staging plans), filled in after COPY. */
  types: Map<string, string>;
  /** Where a failing value is, for errors. */
  place: LoadPlace;
  /** The checks of the values of columns whose type is known before COPY (existing or declared), or none. */
  fit: ValueFit | undefined;
}

/**
 * Plans the load of a report with `reportColumns` into a target with `existing` columns (undefined: none).
 * @throws EtlError TARGET_INVALID when a merge key or declared column is not the report's (target-names.ts);
 *   SchemaChangedError under `schemaChanges: freeze` when the columns differ
 */
export function planLoad(
  tx: pg.PoolClient,
  spec: LoadSpec,
  source: RowSource,
  reportColumns: readonly string[],
  existing: TargetColumn[] | undefined,
  recorded: RecordedNames,
): Load {
  const { names, toRecord } = source.fixedColumns
    ? { names: [...reportColumns], toRecord: [] }
    : nameTargetColumns(reportColumns, existing, recorded);
  checkTargetNames(spec, names, existing);
  checkMandantClash(spec.job, names, reportColumns, spec.mandant);
  const existingType = new Map((existing ?? []).map((c) => [c.name, c.type]));
  if (spec.schemaChanges === 'freeze' && existing && !source.fixedColumns) {
    const kept = existing.filter((c) => c.name !== spec.mandant?.column);
    const diff = schemaDifference(names, kept, spec.declaredTypes);
    if (diff) throw new SchemaChangedError(`${spec.target.schema}.${spec.target.table}`, diff);
  }
  const complete = existing !== undefined && names.every((n) => existingType.has(n));
  const types = new Map<string, string>();
  const place = loadPlace(
    `${spec.target.schema}.${spec.target.table}`,
    source,
    reportColumns,
    names,
    (c) => types.get(c) ?? existingType.get(c),
  );
  // A range's rows are checked before the target is touched: in a staging table.
  const staged = spec.mode === 'merge' || spec.range !== undefined;
  const plan = complete ? (staged ? 'typed-staging' : 'direct') : 'inference-staging';
  const fit = source.fixedColumns ? undefined : valueFitOf(names, reportColumns, existingType, spec, place);
  return {
    tx,
    spec,
    source,
    plan,
    reportColumns,
    names,
    toRecord,
    existingType,
    exists: !!existing,
    types,
    place,
    fit,
  };
}

/**
 * Where the rows of `source` are, for errors about a value: the report's columns, the names they load as (in COPY
 * order) and the type of each.
 */
export function loadPlace(
  table: string,
  source: RowSource,
  reportColumns: readonly string[],
  names: readonly string[],
  columnType: (column: string) => string | undefined,
): LoadPlace {
  return {
    table,
    pageOfRow: (row) => source.pageOfRow(row),
    rowsBeforePage: (page) => source.rowsBeforePage(page),
    rowOfCopyLine: (line) => source.rowOfCopyLine?.(line) ?? line,
    reportColumn: (c) => reportColumns[names.indexOf(c)],
    columnType,
    columnAt: (i) => names[i],
  };
}

/**
 * The checks that no value changes on its way into a column whose type is known before COPY: an existing column's,
 * else a declared one's (value-fit.ts); undefined when no column has a rule.
 */
function valueFitOf(
  names: readonly string[],
  reportColumns: readonly string[],
  existingType: ReadonlyMap<string, string>,
  spec: LoadSpec,
  place: LoadPlace,
): ValueFit | undefined {
  const types = names.map((n) => existingType.get(n) ?? spec.declaredTypes.get(n));
  const fit = new ValueFit(
    types,
    (change) => {
      const k = change.column;
      throw valueChangeError(
        change,
        place.table,
        names[k]!,
        types[k]!,
        reportColumns[k]!,
        place.rowsBeforePage(change.page),
      );
    },
    spec.timezone,
  );
  return fit.any ? fit : undefined;
}

/**
 * Whether this load may go binary at all, before the report's columns are known (a source that writes binary rows,
 * enough rows, a target that exists): then a chooser for its columns, with the zone check already asked.
 */
export async function binaryChoice(
  tx: pg.PoolClient,
  spec: LoadSpec,
  source: RowSource,
  existing: TargetColumn[] | undefined,
): Promise<BinaryChooser | undefined> {
  const enough = (spec.expectedRows ?? 0) >= (spec.binaryMinRows ?? BINARY_MIN_ROWS);
  if (!source.writesBinary || !existing || !enough) return undefined;
  const types = existing.map((c) => c.type);
  return binaryChooser(tx, types, spec.timezone);
}

/** The binary encodings of the planned load's columns (COPY order), or undefined: text format. */
export function binaryEncodings(load: Load, choose: BinaryChooser | undefined): BinaryEncoding[] | undefined {
  if (!choose || load.plan === 'inference-staging') return undefined;
  const choice = choose(load.names.map((n) => load.existingType.get(n)!));
  if (!('refused' in choice)) return choice.encodings;
  if (choice.refused === 'the zone offsets disagree')
    load.spec.logger.info(
      { timezone: load.spec.timezone },
      "this process and PostgreSQL disagree on the zone's offsets: loading in text format",
    );
  return undefined;
}
