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
 *
 * Format: on the direct and typed-staging plans the column types are known before the first row, so when
 * every one has a binary encoding (copy-binary.ts), the source can write it and the report has at least
 * {@link BINARY_MIN_ROWS} rows, COPY runs in binary format, which
 * spares PostgreSQL parsing text. Should a value not be in a form the encoders take, or PostgreSQL refuse a binary
 * value, the load rolls back to a savepoint before the COPY and loads the report again in text format: PostgreSQL
 * then reads every value itself, and a value that does not fit fails the run with the same words as ever.
 *
 * Lineage: on every plan, an append load's rows get their run key and load time from the target's column DEFAULTs
 * (lineage.ts), so COPY carries the report's columns only.
 */
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import pgCopyStreams from 'pg-copy-streams';
import { cancelOnAbort, releaseClient, StatementCancelledError } from '../db.ts';
import { isConnectionLoss } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { SchemaChanges, WriteMode } from '../vocabulary.ts';
import { inferColumnType } from './column-types.ts';
import { quoteIdent, quoteTable, type TableName } from './identifiers.ts';
import { nameTargetColumns, recordColumnNames, recordedColumnNames, type RecordedNames } from './column-names.ts';
import {
  databaseError,
  isValueError,
  mapCopyError,
  RowCountMismatchError,
  SchemaChangedError,
  schemaDifference,
  type LoadPlace,
} from './load-errors.ts';
import type { PlanRows, RowSource } from './row-source.ts';
import { binaryChooser, type BinaryChooser } from '../copy-binary/choose.ts';
import { BinaryValueUnsupported, framed, type BinaryEncoding } from '../copy-binary/format.ts';
import { applyFromStaging, createStaging, STAGING } from './staging.ts';
import { checkTargetNames } from './target-names.ts';
import { addLineageColumns, startLineage } from './lineage.ts';
import { rowsGivenBack } from './copy-written.ts';
import { addColumns, createTable, describeTable, ensureSchema, lockTarget, type TargetColumn } from './target-table.ts';

/** How the rows reached the target. */
export type LoadPlan = 'direct' | 'typed-staging' | 'inference-staging' | 'empty';

/** Where and how a report's rows are loaded. */
export interface LoadSpec {
  /** The jobs.yaml job the load is for, named in errors about its target options. */
  job?: string | undefined;
  target: TableName;
  mode: WriteMode;
  /** Merge key columns (normalised names). */
  key: readonly string[];
  /** Declared types by normalised column name, already resolved with to_regtype. */
  declaredTypes: ReadonlyMap<string, string>;
  /**
   * What to do when the report's columns differ from an existing target's (docs/loaded-tables.md "Guards and schema
   * changes"): evolve (default) adds new columns; freeze fails the load with SCHEMA_CHANGED before any row is loaded.
   */
  schemaChanges?: SchemaChanges;
  /**
   * Rows the server said the report has (the report job's rows=); any other count fails the load. Undefined for the
   * output types whose rows are not report rows (lines, documents), where the caller checks the page count instead.
   */
  expectedRows: number | undefined;
  /** The load session's TimeZone (the connection's `timezone`): the zone of timestamps written without offset. */
  timezone: string;
  /**
   * Fewest rows (`expectedRows`) for COPY binary format, default {@link BINARY_MIN_ROWS}: below it PostgreSQL's text
   * parsing costs less than binary's set-up (the zone check's Intl look-ups, a savepoint).
   */
  binaryMinRows?: number;
  logger: Logger;
  /**
   * The run the rows belong to (etl.runs.run_key). An append load tags every row it loads with it and the load time,
   * in the target's lineage columns (lineage.ts; docs/loaded-tables.md "Lineage of appended rows"); other write modes
   * ignore it.
   */
  runKey?: string | undefined;
  /**
   * Times the steps PostgreSQL spends long on, for the attempt's timeline and spans: the DELETE of a replaced target's
   * rows, each COPY, and applying the write mode from a staging table (typing the target included). Default untimed.
   */
  timed?: TimeLoadStep | undefined;
}

/** The steps of a load that {@link LoadSpec.timed} times. */
export type LoadStep = 'target_delete' | 'copy' | 'apply';

/** Runs `fn` as load step `step`, timing it. */
export type TimeLoadStep = <T>(step: LoadStep, fn: () => Promise<T>) => Promise<T>;

const untimed: TimeLoadStep = (_step, fn) => fn();

/** How COPY read the rows: the source's text format, or binary (see the file comment). */
export type CopyFormatUsed = 'text' | 'csv' | 'binary';

/** What a load did. */
export interface LoadResult {
  plan: LoadPlan;
  /** The format of the COPY that loaded the rows ('text' also for a load with no rows). */
  format: CopyFormatUsed;
  /** Rows COPY took in (equal to the server's rows=, or the load failed). */
  rows: number;
  columns: TargetColumn[];
}

/**
 * Runs `fn` inside the load transaction of `target` on a client of `pool`: the target's schema exists (created
 * outside the transaction, see ensureSchema), the session reads timestamps without offset in `timezone` with
 * DateStyle ISO, DMY (txt), and loads into the same target are serialised until the transaction ends. Once `signal`
 * aborted, the statements that PostgreSQL holds are cancelled (db.ts cancelOnAbort: a load waiting for a lock ends
 * too) and nothing commits.
 * @param fn does the load and the caller's records on `tx`; returns whether to commit
 * @returns whether the transaction was committed (false: `fn` asked for a rollback)
 * @throws the signal's reason when it aborted before the commit; StatementCancelledError wrapping the error of a
 *   statement the abort cancelled; whatever `fn` throws; each after ROLLBACK
 */
export async function withLoadTransaction(
  pool: pg.Pool,
  o: { target: TableName; timezone: string; signal?: AbortSignal | undefined },
  fn: (tx: pg.PoolClient) => Promise<boolean>,
): Promise<boolean> {
  o.signal?.throwIfAborted();
  const db = await pool.connect();
  const canceller = cancelOnAbort(pool, db, o.signal);
  let broken = false;
  try {
    await ensureSchema(db, o.target.schema);
    await db.query('BEGIN');
    try {
      await db.query(`SELECT set_config('DateStyle', 'ISO, DMY', true), set_config('TimeZone', $1, true)`, [
        o.timezone,
      ]);
      await lockTarget(db, o.target);
      const commit = await fn(db);
      // No cancel may hit the COMMIT or ROLLBACK; an abort that came while the last statements ran (or while the
      // canceller ended) commits nothing: not past the deadline, not into a shutdown.
      await canceller.end();
      if (commit) o.signal?.throwIfAborted();
      await db.query(commit ? 'COMMIT' : 'ROLLBACK');
      return commit;
    } catch (err) {
      // No more cancels: the ROLLBACK must run.
      await canceller.end();
      await db.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  } catch (err) {
    broken = isConnectionLoss(err) || isConnectionLoss((err as { cause?: unknown }).cause);
    // canceller.end() is the same answer every time it is asked.
    const cancelled = await canceller.end();
    if (cancelled) throw new StatementCancelledError(cancelled, err);
    throw err;
  } finally {
    releaseClient(db, broken || (await canceller.end()) !== undefined);
  }
}

/**
 * Loads a report's rows into the target in its write mode, inside the caller's load transaction, in named steps:
 * read the columns → plan → choose the COPY format → prepare the target (DELETE for a direct replace, or a staging
 * table) → COPY → (staging plans) type, create or evolve the target → apply the write mode.
 * @param tx the client of {@link withLoadTransaction}
 * @throws RowCountMismatchError when COPY took in a different number of rows than `spec.expectedRows`
 * @throws ValueDoesNotFitError naming column, page, row and value
 * @throws EtlError TARGET_INVALID (merge key missing, target is a view, ...), DATABASE, or whatever the source
 *   throws (fetch and parse errors, AbortedError)
 */
export async function loadRows(tx: pg.PoolClient, spec: LoadSpec, source: RowSource): Promise<LoadResult> {
  const existing = await describeTarget(tx, spec, source);
  const recorded = source.fixedColumns
    ? new Map<string, string>()
    : await recordedColumnNames(tx, spec.target, existing);
  const lineage = spec.mode === 'append' && spec.runKey !== undefined;
  if (lineage) await startLineage(tx, spec.target, spec.runKey!, existing !== undefined);
  const chooseBinary = await binaryChoice(tx, spec, source, existing);
  // Asked by the source when it knows the report's columns, before it decodes any row (pages/rows-plan.ts).
  let load: Load | undefined;
  const planRows: PlanRows = (columns) => {
    load = planLoad(tx, spec, source, columns, existing, recorded);
    const encodings = load.plan === 'inference-staging' ? undefined : binaryEncodings(load, chooseBinary);
    return { inspect: load.plan === 'inference-staging', binary: encodings && { encodings, timezone: spec.timezone } };
  };
  const reportColumns = await source.open(planRows);
  if (!reportColumns) return loadEmpty(tx, spec, existing);
  // A fixed-shape source knows its columns without asking.
  load ??= planLoad(tx, spec, source, reportColumns, existing, recorded);
  // A direct replace in binary format decodes its first rows while PostgreSQL deletes the old ones.
  const binaryRows =
    source.format === 'binary'
      ? load.plan === 'direct' && spec.mode === 'replace'
        ? readAhead(source.rows(), READ_AHEAD_BYTES)
        : source.rows()
      : undefined;
  const into = await prepareTarget(load, binaryRows !== undefined);
  const copied = await copyReport(load, into, binaryRows);
  if (spec.expectedRows !== undefined && copied.rows !== spec.expectedRows)
    throw new RowCountMismatchError(spec.expectedRows, copied.rows);
  if (load.plan === 'direct') {
    const { existingType, names } = load;
    await recordNames(load);
    return { plan: 'direct', ...copied, columns: names.map((n) => ({ name: n, type: existingType.get(n)! })) };
  }
  const staged = load;
  const columns = await (spec.timed ?? untimed)('apply', async () => {
    const typed = await createOrEvolveTarget(staged);
    if (lineage && !staged.exists) await addLineageColumns(tx, spec.target);
    await recordNames(staged);
    await applyFromStaging(tx, {
      target: spec.target,
      mode: spec.mode,
      key: spec.key,
      columns: typed,
      cast: staged.plan === 'inference-staging',
      place: staged.place,
    }).catch((err: unknown) => {
      throw databaseError(err, 'load');
    });
    return typed;
  });
  return { plan: load.plan, ...copied, columns };
}

/** One load as its steps share it: the options once, and what the plan found. */
interface Load {
  tx: pg.PoolClient;
  spec: LoadSpec;
  source: RowSource;
  /** The report's column names as sent, and the target's columns they load into (column-names.ts), in COPY order. */
  reportColumns: readonly string[];
  names: string[];
  /** (report column, target column) pairs to record with the target once it has them. */
  toRecord: [string, string][];
  /** The target's columns now (empty when it does not exist), and whether it exists. */
  existingType: Map<string, string>;
  exists: boolean;
  plan: Exclude<LoadPlan, 'empty'>;
  /** The types the target's new columns get (staging plans), filled in after COPY. */
  types: Map<string, string>;
  /** Where a failing value is, for errors. */
  place: LoadPlace;
  /** `schema.table`, for logs. */
  tableName: string;
}

/** The target's columns (undefined when it does not exist); a fixed-shape output type creates or completes it first. */
async function describeTarget(
  tx: pg.PoolClient,
  spec: LoadSpec,
  source: RowSource,
): Promise<TargetColumn[] | undefined> {
  const existing = await describeTable(tx, spec.target);
  return source.fixedColumns ? ensureFixedTable(tx, spec, existing, source.fixedColumns) : existing;
}

/**
 * Plans the load: straight into the target when it has every report column (replace, append), through a typed
 * staging table for merge, through a text staging table with type inference when the target is new or lacks columns.
 * @throws EtlError TARGET_INVALID when a merge key or a declared column is not a column of the report (target-names.ts)
 */
function planLoad(
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
  const existingType = new Map((existing ?? []).map((c) => [c.name, c.type]));
  if (spec.schemaChanges === 'freeze' && existing && !source.fixedColumns) refuseSchemaChange(spec, names, existing);
  const complete = existing !== undefined && names.every((n) => existingType.has(n));
  const plan = complete ? (spec.mode === 'merge' ? 'typed-staging' : 'direct') : 'inference-staging';
  const types = new Map<string, string>();
  const tableName = `${spec.target.schema}.${spec.target.table}`;
  const place: LoadPlace = {
    table: tableName,
    pageOfRow: (row) => source.pageOfRow(row),
    reportColumn: (c) => reportColumns[names.indexOf(c)],
    columnType: (c) => types.get(c) ?? existingType.get(c),
  };
  return {
    tx,
    spec,
    source,
    reportColumns,
    names,
    toRecord,
    existingType,
    exists: existing !== undefined,
    plan,
    types,
    place,
    tableName,
  };
}

/** Records which report column each target column was made for (column-names.ts), in the load transaction. */
async function recordNames(load: Load): Promise<void> {
  if (load.toRecord.length === 0) return;
  await recordColumnNames(load.tx, load.spec.target, load.toRecord, !load.exists).catch((err: unknown) => {
    throw databaseError(err, 'load');
  });
}

/**
 * Under `schemaChanges: freeze`, refuses a report whose columns differ from the existing target's: new report
 * columns, target columns the report lacks, or a declared type other than the target's.
 * @throws SchemaChangedError listing the difference (nothing is loaded yet)
 */
function refuseSchemaChange(spec: LoadSpec, names: readonly string[], existing: readonly TargetColumn[]): void {
  const diff = schemaDifference(names, existing, spec.declaredTypes);
  if (diff) throw new SchemaChangedError(`${spec.target.schema}.${spec.target.table}`, diff);
}

/**
 * Prepares what COPY writes into: a direct replace DELETEs the old rows (readers keep seeing them until the commit)
 * and COPYs into the target; the staging plans make a staging table (typed like the target, or text).
 * @returns the quoted table COPY writes into
 */
async function prepareTarget(load: Load, binary: boolean): Promise<string> {
  const { tx, spec, names, existingType, plan } = load;
  load.spec.logger.info(
    { plan, table: load.tableName, columns: names.length, format: binary ? 'binary' : textFormatOf(load.source) },
    'loading',
  );
  if (plan === 'direct') {
    if (spec.mode === 'replace')
      await (spec.timed ?? untimed)('target_delete', () => tx.query(`DELETE FROM ${quoteTable(spec.target)}`));
    return quoteTable(spec.target);
  }
  await createStaging(
    tx,
    names.map((n) => ({ name: n, type: plan === 'typed-staging' ? existingType.get(n)! : 'text' })),
  );
  return STAGING;
}

/**
 * COPYs every row of the report into `into`: in binary format when `binaryRows` are given (the source switched to
 * binary rows), else the source's text format (with the kinds of every value recorded for a staging plan's inference). Should a value not be in a form the
 * binary encoders take, or PostgreSQL refuse a binary value, it rolls back to a savepoint and loads the report again
 * in text format, where PostgreSQL reads every value itself.
 * @returns the rows COPY took in and the format that loaded them
 */
async function copyReport(
  load: Load,
  into: string,
  binaryRows: AsyncIterable<Buffer> | undefined,
): Promise<{ rows: number; format: CopyFormatUsed }> {
  const { tx, spec, source, names, place } = load;
  const textFormat = textFormatOf(source);
  if (binaryRows) {
    await tx.query('SAVEPOINT report_etl_binary');
    try {
      return {
        rows: await (spec.timed ?? untimed)('copy', () => copyRows(tx, into, names, 'binary', binaryRows)),
        format: 'binary',
      };
    } catch (err) {
      const unsupported = err instanceof BinaryValueUnsupported;
      if (!unsupported && !isValueError((err as { code?: string }).code)) throw mapCopyError(err, place);
      await tx.query('ROLLBACK TO SAVEPOINT report_etl_binary');
      spec.logger.info(
        {
          table: load.tableName,
          reason: unsupported
            ? `${err.message} (report column "${load.reportColumns[err.column]}")`
            : (err as Error).message,
        },
        'binary COPY stopped at a value: loading the report again in text format, where PostgreSQL reads every value itself',
      );
      await source.restart();
      await source.open(() => ({ inspect: load.plan === 'inference-staging' }));
    }
  }
  try {
    return {
      rows: await (spec.timed ?? untimed)('copy', () => copyRows(tx, into, names, textFormat, source.rows())),
      format: textFormat,
    };
  } catch (err) {
    throw mapCopyError(err, place);
  }
}

/**
 * The staging plans' target after COPY: each column typed as the target has it, else as declared in jobs.yaml, else
 * as inferred from the kinds of its values; a new target is created with them, an existing one gets the columns it
 * lacks.
 * @returns the columns in COPY order with their types
 */
async function createOrEvolveTarget(load: Load): Promise<TargetColumn[]> {
  const { tx, spec, names, existingType, types } = load;
  const kinds = load.source.kinds();
  for (const [i, n] of names.entries())
    types.set(n, existingType.get(n) ?? spec.declaredTypes.get(n) ?? inferColumnType(kinds[i] ?? 0));
  const columns = names.map((n) => ({ name: n, type: types.get(n)! }));
  try {
    if (!load.exists) await createTable(tx, spec.target, columns, spec.mode === 'merge' ? spec.key : []);
    else
      await addColumns(
        tx,
        spec.target,
        columns.filter((c) => !existingType.has(c.name)),
      );
  } catch (err) {
    throw databaseError(err, 'load');
  }
  return columns;
}

/** The text COPY format of a source: csv for txt (pass-through), else text. */
function textFormatOf(source: RowSource): 'text' | 'csv' {
  return source.copyFormat === 'csv' ? 'csv' : 'text';
}

/**
 * Whether this load may go binary at all, before the report's columns are known: a source that can write binary
 * rows, enough rows to pay for it, a target that exists; then a chooser for the report's columns (copy-binary/choose.ts),
 * with the zone check already asked.
 */
async function binaryChoice(
  tx: pg.PoolClient,
  spec: LoadSpec,
  source: RowSource,
  existing: TargetColumn[] | undefined,
): Promise<BinaryChooser | undefined> {
  if (!source.writesBinary || !existing || (spec.expectedRows ?? 0) < (spec.binaryMinRows ?? BINARY_MIN_ROWS))
    return undefined;
  return binaryChooser(
    tx,
    existing.map((c) => c.type),
    spec.timezone,
  );
}

/** The binary encodings of the planned load's target columns (COPY order), or undefined: text format. */
function binaryEncodings(load: Load, choose: BinaryChooser | undefined): BinaryEncoding[] | undefined {
  if (!choose) return undefined;
  const choice = choose(load.names.map((n) => load.existingType.get(n)!));
  if ('refused' in choice) {
    if (choice.refused === 'the zone offsets disagree')
      load.spec.logger.info(
        { timezone: load.spec.timezone },
        "this process and PostgreSQL disagree on the zone's offsets: loading in text format",
      );
    return undefined;
  }
  return choice.encodings;
}

/** Fewest rows of a report loaded in COPY binary format (LoadSpec.binaryMinRows). */
export const BINARY_MIN_ROWS = 10_000;

/** Bytes of rows decoded ahead of COPY while PostgreSQL deletes a replaced target's rows. */
const READ_AHEAD_BYTES = 8 * 1024 * 1024;

/**
 * Starts pulling `rows` now, into memory up to about `maxBytes`, until the one consumer of the returned iterable
 * starts: it gets what was pulled, then the rest as it pulls. A failure while reading ahead is thrown to that
 * consumer, never unhandled.
 */
function readAhead(rows: AsyncIterable<Buffer>, maxBytes: number): AsyncIterable<Buffer> {
  const it = rows[Symbol.asyncIterator]();
  const held: Buffer[] = [];
  let consuming = false;
  let ended = false;
  let failure: { err: unknown } | undefined;
  const pumped = (async () => {
    for (let bytes = 0; !consuming && bytes < maxBytes;) {
      const r = await it.next();
      if (r.done) {
        ended = true;
        return;
      }
      held.push(r.value);
      bytes += r.value.length;
    }
  })().catch((err: unknown) => {
    failure = { err };
  });
  return {
    async *[Symbol.asyncIterator]() {
      consuming = true;
      try {
        await pumped;
        if (failure) throw failure.err;
        for (let k = 0; k < held.length; k++) yield held[k]!;
        held.length = 0;
        if (ended) return;
        for (let r = await it.next(); !r.done; r = await it.next()) yield r.value;
      } finally {
        await it.return?.();
      }
    },
  };
}

/**
 * One COPY FROM STDIN of `rows`; binary rows are framed with the stream's header and trailer. Each Buffer goes back to
 * the slab pool once written (copy-written.ts).
 */
async function copyRows(
  tx: pg.PoolClient,
  into: string,
  names: readonly string[],
  format: CopyFormatUsed,
  rows: AsyncIterable<Buffer>,
): Promise<number> {
  const copy = tx.query(
    pgCopyStreams.from(`COPY ${into} (${names.map(quoteIdent).join(', ')}) FROM STDIN WITH (FORMAT ${format})`),
  );
  await pipeline(rowsGivenBack(format === 'binary' ? framed(rows) : rows, copy, tx), copy);
  return copy.rowCount;
}

/**
 * The target of an output type with a fixed shape: created with exactly those columns when it does not exist (a
 * bytea column stored EXTERNAL: documents are compressed already, and a download reads slices of it), extended by
 * the missing ones otherwise.
 * @returns the target's columns afterwards
 */
async function ensureFixedTable(
  tx: pg.PoolClient,
  spec: LoadSpec,
  existing: TargetColumn[] | undefined,
  fixed: readonly TargetColumn[],
): Promise<TargetColumn[]> {
  try {
    if (!existing) {
      await createTable(tx, spec.target, fixed, spec.mode === 'merge' ? spec.key : []);
      for (const c of fixed) {
        if (c.type === 'bytea')
          await tx.query(
            `ALTER TABLE ${quoteTable(spec.target)} ALTER COLUMN ${quoteIdent(c.name)} SET STORAGE EXTERNAL`,
          );
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
  if (existing && spec.mode === 'replace')
    await (spec.timed ?? untimed)('target_delete', () => tx.query(`DELETE FROM ${quoteTable(spec.target)}`));
  if (!existing)
    spec.logger.warn(
      { table: `${spec.target.schema}.${spec.target.table}` },
      'report has no rows and no columns: target not created',
    );
  return { plan: 'empty', format: 'text', rows: 0, columns: existing ?? [] };
}
