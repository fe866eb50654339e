/**
 * One report's rows into PostgreSQL: a single COPY FROM STDIN (pg-copy-streams) fed with backpressure by a
 * {@link RowSource}, inside the caller's load transaction (load-transaction.ts), which commits it together with the
 * run history or rolls all of it back. The plan (load-plan.ts) says where COPY writes. Should a value not be in a form
 * the binary encoders take, or PostgreSQL refuse a binary value, the load rolls back to a savepoint before the COPY
 * and loads the report again in text format, where PostgreSQL reads every value itself. An append load's rows get
 * their run key and load time from the target's column DEFAULTs (lineage.ts), so COPY carries the report's columns.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import pgCopyStreams from 'pg-copy-streams';
import { BinaryValueUnsupported, framed } from '../copy-binary/format.ts';
import { holdsSkippedTime, inferColumnType } from './column-types.ts';
import { recordColumnNames, recordedColumnNames } from './column-names.ts';
import { quoteIdent, quoteTable } from './identifiers.ts';
import { addLineageColumns, startLineage } from './lineage.ts';
import { addMandantColumn, mandantCondition, startMandant, withMandantColumn } from './mandant-column.ts';
import { databaseError, isValueError, mapCopyError, RowCountMismatchError } from './load-errors.ts';
import {
  binaryChoice,
  binaryEncodings,
  planLoad,
  type Load,
  type LoadPlan,
  type LoadSpec,
  type TimeLoadStep,
} from './load-plan.ts';
import { readAhead } from './read-ahead.ts';
import { deleteRange } from './replace-range.ts';
import type { PlanRows, RowSource } from './row-source.ts';
import { applyFromStaging, createStaging, STAGING } from './staging.ts';
import { addColumns, createTable, describeTable, type TargetColumn } from './target-table.ts';

/** How COPY read the rows: the source's text format, or binary. */
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

const untimed: TimeLoadStep = (_step, fn) => fn();

/** The text COPY format of a source: csv for txt (pass-through), else text. */
function textFormatOf(source: RowSource): 'text' | 'csv' {
  return source.copyFormat === 'csv' ? 'csv' : 'text';
}

/**
 * Bytes of rows decoded ahead of COPY while PostgreSQL deletes a replaced target's rows. Every byte of it adds to the
 * worker's peak RSS: 8 MiB cost a 1M-row txt load about 8 MB more than 2 MiB, for no throughput the bench could tell.
 */
const READ_AHEAD_BYTES = 2 * 1024 * 1024;

/**
 * Loads a report's rows into the target in its write mode, in the caller's load transaction: plan → prepare the
 * target (DELETE for a direct replace, or a staging table) → COPY → (staging plans) type, create or evolve the target
 * and apply the write mode.
 * @throws RowCountMismatchError when COPY took in other than `spec.expectedRows`; ValueDoesNotFitError naming column,
 *   page, row and value; EtlError TARGET_INVALID, SCHEMA_CHANGED, DATABASE; what the source throws
 */
export async function loadRows(tx: pg.PoolClient, spec: LoadSpec, source: RowSource): Promise<LoadResult> {
  const timed = spec.timed ?? untimed;
  const existing = source.fixedColumns
    ? await ensureFixedTable(tx, spec, source.fixedColumns)
    : await describeTable(tx, spec.target);
  const recorded = source.fixedColumns
    ? new Map<string, string>()
    : await recordedColumnNames(tx, spec.target, existing);
  const lineage = spec.mode === 'append' && spec.runKey !== undefined;
  if (lineage) await startLineage(tx, spec.target, spec.runKey!, existing !== undefined);
  if (spec.mandant)
    await startMandant(tx, spec.target, spec.mandant, existing !== undefined, { mode: spec.mode, job: spec.job });
  const chooseBinary = await binaryChoice(tx, spec, source, existing);
  // Asked by the source when it knows the report's columns, before it decodes any row (pages/rows-plan.ts).
  let planned: Load | undefined;
  const planRows: PlanRows = (columns) => {
    planned = planLoad(tx, spec, source, columns, existing, recorded);
    const encodings = binaryEncodings(planned, chooseBinary);
    return {
      inspect: planned.plan === 'inference-staging',
      binary: encodings && { encodings, timezone: spec.timezone },
      fit: planned.fit,
    };
  };
  const reportColumns = await source.open(planRows);
  if (!reportColumns) return loadEmpty(tx, spec, existing);
  // A fixed-shape source knows its columns without asking.
  const load = planned ?? planLoad(tx, spec, source, reportColumns, existing, recorded);
  const { plan, names, existingType } = load;
  const format = source.format === 'binary' ? 'binary' : textFormatOf(source);
  spec.logger.info({ plan, table: load.place.table, columns: names.length, format }, 'loading');
  if (plan !== 'direct')
    await createStaging(
      tx,
      names.map((n) => ({ name: n, type: plan === 'typed-staging' ? existingType.get(n)! : 'text' })),
    );
  // A direct replace in binary format decodes its first rows while PostgreSQL deletes the old ones.
  const deleting = plan === 'direct' && spec.mode === 'replace';
  const binaryRows =
    format === 'binary' ? (deleting ? readAhead(source.rows(), READ_AHEAD_BYTES) : source.rows()) : undefined;
  if (deleting) await timed('target_delete', () => deleteRows(tx, spec));
  const copied = await copyReport(load, plan === 'direct' ? quoteTable(spec.target) : STAGING, binaryRows, timed);
  if (spec.expectedRows !== undefined && copied.rows !== spec.expectedRows)
    throw new RowCountMismatchError(spec.expectedRows, copied.rows);
  if (plan === 'direct') {
    await recordNames(load);
    return { plan, ...copied, columns: names.map((n) => ({ name: n, type: existingType.get(n)! })) };
  }
  const columns = await timed('apply', async () => {
    const typed = await createOrEvolveTarget(load);
    if (lineage && !load.exists) await addLineageColumns(tx, spec.target);
    if (spec.mandant && !load.exists) await addMandantColumn(tx, spec.target, spec.mandant);
    await recordNames(load);
    await applyFromStaging(tx, {
      target: spec.target,
      mode: spec.mode,
      key: spec.key,
      columns: typed,
      cast: plan === 'inference-staging',
      range: spec.range,
      mandant: spec.mandant,
      place: load.place,
    }).catch((err: unknown) => {
      throw databaseError(err, 'load');
    });
    return typed;
  });
  return { plan, ...copied, columns };
}

/** Records which report column each target column was made for (column-names.ts), in the load transaction. */
async function recordNames(load: Load): Promise<void> {
  if (load.toRecord.length === 0) return;
  await recordColumnNames(load.tx, load.spec.target, load.toRecord, !load.exists).catch((err: unknown) => {
    throw databaseError(err, 'load');
  });
}

/**
 * COPYs every row of the report into `into`: in binary format when `binaryRows` are given, else the source's text
 * format; a binary COPY stopped by a value falls back to text (see the file comment).
 */
async function copyReport(
  load: Load,
  into: string,
  binaryRows: AsyncIterable<Buffer> | undefined,
  timed: TimeLoadStep,
): Promise<{ rows: number; format: CopyFormatUsed }> {
  const { tx, spec, source, names, place } = load;
  if (binaryRows) {
    await tx.query('SAVEPOINT report_etl_binary');
    try {
      return { rows: await timed('copy', () => copyRows(tx, into, names, 'binary', binaryRows)), format: 'binary' };
    } catch (err) {
      const unsupported = err instanceof BinaryValueUnsupported;
      if (!unsupported && !isValueError((err as { code?: string }).code)) throw mapCopyError(err, place);
      await tx.query('ROLLBACK TO SAVEPOINT report_etl_binary');
      spec.logger.info(
        {
          table: place.table,
          reason: unsupported
            ? `${err.message} (report column "${load.reportColumns[err.column]}")`
            : (err as Error).message,
        },
        'binary COPY stopped at a value: loading the report again in text format, where PostgreSQL reads every value ' +
          'itself',
      );
      await source.restart();
      await source.open(() => ({ inspect: load.plan === 'inference-staging', fit: load.fit }));
    }
  }
  const format = textFormatOf(source);
  try {
    return { rows: await timed('copy', () => copyRows(tx, into, names, format, source.rows())), format };
  } catch (err) {
    throw mapCopyError(err, place);
  }
}

/**
 * The staging plans' target after COPY: each column typed as the target has it, else as declared, else as inferred
 * from the kinds of its values; a new target is created with them, an existing one gets the columns it lacks.
 * @returns the columns in COPY order with their types
 */
async function createOrEvolveTarget(load: Load): Promise<TargetColumn[]> {
  const { tx, spec, names, existingType, types } = load;
  const kinds = load.source.kinds();
  for (const [i, n] of names.entries())
    types.set(n, existingType.get(n) ?? spec.declaredTypes.get(n) ?? inferColumnType(kinds[i] ?? 0));
  const columns = names.map((n) => ({ name: n, type: types.get(n)! }));
  await keepSkippedTimesText(load, columns);
  try {
    if (!load.exists) {
      const created = withMandantColumn(columns, spec.mode === 'merge' ? spec.key : [], spec.mandant);
      await createTable(tx, spec.target, created.columns, created.key);
    } else
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

/**
 * Types `text` the inferred timestamptz columns that hold a local time the load's zone skips (column-types.ts
 * holdsSkippedTime; docs/loaded-tables.md "Types"), in `columns` and in the load's types.
 * @throws EtlError DATABASE when the check's query fails
 */
async function keepSkippedTimesText(load: Load, columns: TargetColumn[]): Promise<void> {
  const { tx, spec, existingType, types } = load;
  try {
    for (const c of columns)
      if (c.type === 'timestamptz' && !existingType.has(c.name) && !spec.declaredTypes.has(c.name))
        if (await holdsSkippedTime(tx, STAGING, c.name)) types.set(c.name, (c.type = 'text'));
  } catch (err) {
    throw databaseError(err, 'load');
  }
}

/** One COPY FROM STDIN of `rows`; binary rows are framed with the stream's header and trailer. */
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
  await pipeline(Readable.from(format === 'binary' ? framed(rows) : rows, { objectMode: false }), copy);
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
  fixed: readonly TargetColumn[],
): Promise<TargetColumn[]> {
  const existing = await describeTable(tx, spec.target);
  try {
    if (!existing) {
      const created = withMandantColumn(fixed, spec.mode === 'merge' ? spec.key : [], spec.mandant);
      await createTable(tx, spec.target, created.columns, created.key);
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

/** A report with no rows and no header: replace empties an existing target (or its range); nothing to create. */
async function loadEmpty(tx: pg.PoolClient, spec: LoadSpec, existing: TargetColumn[] | undefined): Promise<LoadResult> {
  if (spec.expectedRows !== undefined && spec.expectedRows !== 0) throw new RowCountMismatchError(spec.expectedRows, 0);
  if (existing && spec.mode === 'replace')
    await (spec.timed ?? untimed)('target_delete', () =>
      spec.range ? deleteRange(tx, spec.target, spec.range, spec.mandant) : deleteRows(tx, spec),
    );
  if (!existing)
    spec.logger.warn(
      { table: `${spec.target.schema}.${spec.target.table}` },
      'report has no rows and no columns: target not created',
    );
  return { plan: 'empty', format: 'text', rows: 0, columns: existing ?? [] };
}

/** A replace's DELETE of the target's rows: every row, or the mandant's (mandant-column.ts). */
async function deleteRows(tx: pg.PoolClient, spec: LoadSpec): Promise<number> {
  const m = spec.mandant;
  const res = m
    ? await tx.query(`DELETE FROM ${quoteTable(spec.target)} WHERE ${mandantCondition(m, 1)}`, [m.value])
    : await tx.query(`DELETE FROM ${quoteTable(spec.target)}`);
  return res.rowCount ?? 0;
}
