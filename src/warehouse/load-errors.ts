/**
 * Errors of the load stage, and the mapping of PostgreSQL's errors to ones that name column, page and value.
 */
import { EtlError, isConnectionLoss, isRetryableDatabaseError, type EtlErrorOptions } from '../errors.ts';
import { isLineageColumn } from './lineage.ts';
import type { RunStage } from '../vocabulary.ts';
import type { ValueChange } from './value-fit.ts';

/** The options of a count mismatch: with `page`, the page at which the reading stopped. */
type MismatchOptions = EtlErrorOptions & { page?: number };

/** The error options of a count mismatch: stage load, retryable, the figures as details. */
function mismatchOptions(expected: number, loaded: number, { page, ...rest }: MismatchOptions): EtlErrorOptions {
  const details = { expected, loaded, ...(page === undefined ? {} : { page }) };
  return { stage: 'load', retryable: true, details, ...rest };
}

/**
 * The row count differs from the server's `rows=` (docs/report-export-service.md "Job (report session)": message on
 * FinishedSuccess). With `page`, rows went past it while page `page` was read: reading stopped at once.
 */
export class RowCountMismatchError extends EtlError {
  /**
   * @param loaded rows read: all of them, or with `options.page` those read when the count went past `expected`
   * @param options.page the page that brought more rows than announced
   */
  constructor(expected: number, loaded: number, options: MismatchOptions = {}) {
    super(
      'ROW_COUNT_MISMATCH',
      options.page === undefined
        ? `row count mismatch: the server reported rows=${expected}, ${loaded} rows were read; nothing was committed`
        : `row count mismatch: the server reported rows=${expected}, but ${loaded} rows had arrived by page ` +
            `${options.page}; reading stopped there and nothing was committed`,
      mismatchOptions(expected, loaded, options),
    );
  }
}

/**
 * The page count differs from the server's `pages=` (docs/report-export-service.md "Job (report session)"). With
 * `page`, the server answered a page past it (instead of the 404 that ends the paging): reading stopped there.
 */
export class PageCountMismatchError extends EtlError {
  /**
   * @param loaded pages read completely
   * @param options.page the page past `expected` that the server answered
   */
  constructor(expected: number, loaded: number, options: MismatchOptions = {}) {
    super(
      'PAGE_COUNT_MISMATCH',
      options.page === undefined
        ? `page count mismatch: the server reported pages=${expected}, ${loaded} pages were read; nothing was committed`
        : `page count mismatch: the server reported pages=${expected}, but answered page ${options.page} too (past ` +
            `the last page it answers 404); reading stopped there and nothing was committed`,
      mismatchOptions(expected, loaded, options),
    );
  }
}

/** A value of the report does not fit the target column's type. */
export class ValueDoesNotFitError extends EtlError {
  constructor(message: string, details: Record<string, unknown>, cause?: unknown) {
    super('VALUE_DOES_NOT_FIT', message, { stage: 'load', retryable: false, details, cause });
  }
}

/** A byte of a value that no PostgreSQL text takes, and where it is (see {@link UnfitBytesError}). */
export interface UnfitBytes {
  /** 0-based report column (COPY order). */
  columnIndex: number;
  /** The report's name of the column, when known. */
  reportColumn: string | undefined;
  /** 1-based page (docs/report-export-service.md "Endpoints" #3). */
  page: number;
  /** 1-based row of the run. */
  row: number;
  /** 1-based row within the page. */
  rowOfPage: number;
  /** Byte offset within the page body, counted from its first byte (BOM included). */
  offset: number;
  /** The byte: 0 (NUL), or one that begins no valid UTF-8 sequence. */
  byte: number;
  /** 1-based position of the byte within the value's bytes. */
  byteInValue: number;
  /** The value's first characters, the unfit bytes as U+FFFD. */
  value: string;
}

/** Where the load would have put a value: the target's column, its type (when known yet) and the table. */
export interface UnfitTarget {
  table: string;
  column: string | undefined;
  type: string | undefined;
}

/**
 * A value whose bytes no PostgreSQL text takes: invalid UTF-8, or a NUL byte (docs/loaded-tables.md "Values that
 * cannot load"). A page decoder finds it before COPY does, whose error would name no column; the message names the
 * report column, page and row, and once {@link mapCopyError} knows the load also the target column and table. Not
 * retryable: the server sends the same bytes again.
 */
export class UnfitBytesError extends ValueDoesNotFitError {
  readonly unfit: UnfitBytes;
  constructor(unfit: UnfitBytes, target?: UnfitTarget) {
    const column = target?.column
      ? columnText(target.table, target.column, unfit.reportColumn, target.type)
      : unfit.reportColumn === undefined
        ? `field ${unfit.columnIndex + 1}`
        : `report column "${unfit.reportColumn}"`;
    const hex = `0x${unfit.byte.toString(16).padStart(2, '0')}`;
    const inValue = `byte ${unfit.byteInValue} of the value, byte offset ${unfit.offset} of the page`;
    const why =
      unfit.byte === 0
        ? `it holds a NUL byte (${inValue}), which PostgreSQL text cannot hold: remove it from the value in the ERP, ` +
          'then replay the run'
        : `byte ${hex} (${inValue}) is not UTF-8, the only encoding PostgreSQL text takes here: the report sent the ` +
          'value in another encoding; correct it in the ERP, then replay the run';
    const at = rowPlaceText({ page: unfit.page, rowOfPage: unfit.rowOfPage, row: unfit.row });
    super(`value "${unfit.value}" does not fit ${column}, ${at}: ${why}`, {
      column: target?.column,
      reportColumn: unfit.reportColumn,
      page: unfit.page,
      row: unfit.row,
      rowOfPage: unfit.rowOfPage,
      offset: unfit.offset,
      byte: hex,
      value: unfit.value,
    });
    this.unfit = unfit;
  }
}

/** Characters of a value that an error quotes; a longer value is cut there and its length said. */
const SHOWN_VALUE_CHARS = 200;

/** `value` as an error quotes it: whole up to {@link SHOWN_VALUE_CHARS} characters, else its start and its length. */
function shownValue(value: string): string {
  if (value.length <= SHOWN_VALUE_CHARS) return value;
  return `${value.slice(0, SHOWN_VALUE_CHARS)}… (${value.length.toLocaleString('en-US')} characters)`;
}

/**
 * A value that the target column would change on its way in (value-fit.ts; docs/loaded-tables.md "Values that would
 * change"), found by the page decoder before COPY committed anything: names the target column, the report column, the
 * page, the row and the value, and says how to make the column take such values.
 * @param change where the value is and why it would change
 * @param column the target column (normalised name), `type` its type, `reportColumn` the report's own name
 * @param rowsBeforePage the rows of the run before the value's page (to name its row of the run too)
 */
export function valueChangeError(
  change: ValueChange,
  table: string,
  column: string,
  type: string,
  reportColumn: string,
  rowsBeforePage: number,
): ValueDoesNotFitError {
  // Text and lengths: text keeps every character; rounded numbers: numeric keeps every digit.
  const fix = change.problem.startsWith('it is text') || /^character/.test(type) ? 'text' : 'numeric';
  const at = { page: change.page, rowOfPage: change.row, row: rowsBeforePage + change.row };
  const value = shownValue(change.value);
  return new ValueDoesNotFitError(
    `value "${value}" does not fit ${columnText(table, column, reportColumn, type)}, ` +
      `${rowPlaceText(at)}: ${change.problem}, so it would change on its way in. ` +
      `Nothing was loaded and ${table} is left as it was. To keep such values, change the column's type ` +
      `(ALTER TABLE ${table} ALTER COLUMN ${column} TYPE ${fix}) and declare it under the job's target.columns ` +
      `(${column}: ${fix}); schemaChanges: evolve adds new columns but never changes an existing one`,
    { column, reportColumn, type, ...at, value, problem: change.problem },
  );
}

/** How a report's columns differ from its existing target's (docs/loaded-tables.md "Guards and schema changes"). */
export interface SchemaDifference {
  /** Report columns the target lacks (normalised names). */
  added: string[];
  /** Target columns the report lacks (report-etl's own lineage columns, lineage.ts, are not counted). */
  missing: string[];
  /** Columns whose type in jobs.yaml's `target.columns` is not the target's. */
  typeChanged: { column: string; table: string; declared: string }[];
}

/**
 * The difference between a report's columns and its existing target, or undefined when there is none.
 * @param names the report's normalised column names
 * @param declared `target.columns`, resolved by PostgreSQL (column → type as format_type spells it)
 */
export function schemaDifference(
  names: readonly string[],
  existing: readonly { name: string; type: string }[],
  declared: ReadonlyMap<string, string>,
): SchemaDifference | undefined {
  const have = new Map(existing.map((c) => [c.name, c.type]));
  const report = new Set(names);
  const added = names.filter((n) => !have.has(n));
  const missing = existing.filter((c) => !report.has(c.name) && !isLineageColumn(c.name)).map((c) => c.name);
  const typeChanged = [...declared].flatMap(([column, type]) => {
    const now = have.get(column);
    return now !== undefined && now !== type ? [{ column, table: now, declared: type }] : [];
  });
  return added.length || missing.length || typeChanged.length ? { added, missing, typeChanged } : undefined;
}

/** Under `schemaChanges: freeze`, the report's columns differ from the target's; nothing was loaded. */
export class SchemaChangedError extends EtlError {
  constructor(table: string, diff: SchemaDifference) {
    const parts = [
      diff.added.length ? `added ${diff.added.join(', ')}` : '',
      diff.missing.length ? `missing ${diff.missing.join(', ')}` : '',
      diff.typeChanged.length
        ? 'type changed ' +
          diff.typeChanged.map((t) => `${t.column} (${t.table} in the table, ${t.declared} declared)`).join(', ')
        : '',
    ].filter(Boolean);
    super(
      'SCHEMA_CHANGED',
      `the report's columns differ from ${table} and its job has target.schemaChanges: freeze: ` +
        `${parts.join('; ')}. ${table} is left as it was. ` +
        'Change the table to match (ALTER TABLE), or fix the report, or set schemaChanges: ' +
        'evolve to let runs add columns',
      { stage: 'load', retryable: false, details: { table, ...diff } },
    );
    this.name = 'SchemaChangedError';
  }
}

/** Whether a SQLSTATE says "this value does not fit this type": data exceptions (22xxx) and not-null (23502). */
export function isValueError(code: string | undefined): boolean {
  return !!code && (code.startsWith('22') || code === '23502');
}

/** What COPY's error context says: `COPY t, line 12, column betrag: "12.5"`. */
export interface CopyErrorPosition {
  line: number;
  column?: string | undefined;
  value?: string | undefined;
}

/** Reads the line, column and value from a COPY error's `where` context, if present. */
export function parseCopyContext(where: string | undefined): CopyErrorPosition | undefined {
  if (!where) return undefined;
  const m = /COPY [^,]+, line (\d+)(?:, column ([^:]+): "([\s\S]*)")?/.exec(where);
  if (!m) return undefined;
  return { line: Number(m[1]), column: m[2], value: m[3] };
}

/** Context to name the place of a bad value. */
export interface LoadPlace {
  table: string;
  /** 1-based row of the whole run → 1-based page. */
  pageOfRow(row: number): number;
  /** 1-based page → the rows of the run before it. */
  rowsBeforePage(page: number): number;
  /**
   * 1-based line of COPY's error context → 1-based row of the run: the same but where a row's values hold line
   * breaks that COPY counts (csv; RowSource.rowOfCopyLine).
   */
  rowOfCopyLine(line: number): number;
  /** Normalised column name → the report's own column name. */
  reportColumn(column: string): string | undefined;
  /** Normalised column name → target type. */
  columnType(column: string): string | undefined;
  /** 0-based report column (COPY order) → its normalised name. */
  columnAt(index: number): string | undefined;
}

/** Where a row is: its page, its row within the page and its row of the run (all 1-based). */
export interface RowPlace {
  page: number;
  rowOfPage: number;
  row: number;
}

/**
 * How every error about a value names its row, one form everywhere (docs/troubleshooting.md, VALUE_DOES_NOT_FIT):
 * `page 3, row 17 of the page (row 200017 of the run)` — the page and its row to find it in the report's pages, the
 * row of the run to find it in the run's rows.
 */
export function rowPlaceText(at: RowPlace): string {
  return `page ${at.page}, row ${at.rowOfPage} of the page (row ${at.row} of the run)`;
}

/** `column c (report column "r") of type t in s.table`: the column a value does not fit, as every error names it. */
export function columnText(
  table: string,
  column: string | undefined,
  reportColumn: string | undefined,
  type: string | undefined,
): string {
  const report = reportColumn && reportColumn !== column ? ` (report column "${reportColumn}")` : '';
  return `column ${column ?? '?'}${report}${type ? ` of type ${type}` : ''} in ${table}`;
}

/** The place of row `row` (1-based) of the run. */
export function placeOfRow(place: Pick<LoadPlace, 'pageOfRow' | 'rowsBeforePage'>, row: number): RowPlace {
  const page = place.pageOfRow(row);
  return { page, rowOfPage: row - place.rowsBeforePage(page), row };
}

/**
 * Turns a PostgreSQL error from COPY into an error a person can act on: a value that does not fit becomes
 * {@link ValueDoesNotFitError} naming column, page, row and value (an {@link UnfitBytesError} of the decoder gets the
 * target's column and table); serialization failures and lost connections stay retryable; anything else becomes a
 * DATABASE error with the server's text.
 */
export function mapCopyError(err: unknown, place: LoadPlace): Error {
  if (err instanceof UnfitBytesError) {
    const column = place.columnAt(err.unfit.columnIndex);
    return new UnfitBytesError(err.unfit, {
      table: place.table,
      column,
      type: column === undefined ? undefined : place.columnType(column),
    });
  }
  if (err instanceof EtlError) return err;
  const pgErr = err as { code?: string; message?: string; where?: string };
  const pos = parseCopyContext(pgErr.where);
  if (isValueError(pgErr.code) && pos) {
    const at = placeOfRow(place, place.rowOfCopyLine(pos.line));
    const col = pos.column;
    const reportCol = col ? place.reportColumn(col) : undefined;
    const column = columnText(place.table, col, reportCol, col && place.columnType(col));
    return new ValueDoesNotFitError(
      `value ${pos.value === undefined ? '' : `"${pos.value}" `}does not fit ${column}, ${rowPlaceText(at)}: ` +
        `${pgErr.message}`,
      { column: col, reportColumn: reportCol, ...at, value: pos.value, sqlstate: pgErr.code },
      err,
    );
  }
  return databaseError(err, 'load');
}

/**
 * Wraps a database error as EtlError DATABASE, retryable when another attempt may succeed: a serialization
 * failure, a deadlock, an admin shutdown, or a lost or refused connection (Node socket errors such as ECONNRESET,
 * node-postgres' "Connection terminated unexpectedly"; see errors.ts isRetryableDatabaseError).
 */
export function databaseError(err: unknown, stage: RunStage): Error {
  if (err instanceof EtlError) return err;
  const pgErr = err as { code?: string; message?: string };
  const lost = isConnectionLoss(err);
  return new EtlError(
    'DATABASE',
    `database error${pgErr.code ? ` ${pgErr.code}` : ''}: ${pgErr.message ?? String(err)}` +
      (lost ? ' (the connection to PostgreSQL was lost: the attempt is retried once it is back)' : ''),
    {
      stage,
      retryable: isRetryableDatabaseError(err),
      cause: err,
      details: pgErr.code ? { sqlstate: pgErr.code } : undefined,
    },
  );
}
