/**
 * The contract between whatever produces a report's rows (the page decoders of src/pages, joined over the pages
 * of one report job by the pipeline) and the loader: rows arrive as whole lines in a PostgreSQL COPY format, the
 * report's column names are known before the first row is loaded, and the kinds of every value — the input of
 * type inference — are known after the last. The loader pulls; nothing is buffered whole.
 */
import type { BinaryEncoding } from '../copy-binary/format.ts';
import type { ValueFit } from './value-fit.ts';

/**
 * Bit flags of the kinds of value seen in a column; a column's kind is the OR over its non-null values.
 * - integer: an integer that fits int64
 * - numeric: a decimal, or an integer beyond int64
 * - timestamp: txt bare `dd.mm.yyyy hh:mm:ss.mmm`, or an ISO 8601 timestamp with a UTC offset or without one
 * - date: an ISO 8601 date `yyyy-mm-dd`
 * - boolean: JSON true/false
 * - text: any other string (in txt: any quoted field but an ISO date or timestamp)
 * - json: a JSON object/array value
 */
export const KIND = { integer: 1, numeric: 2, timestamp: 4, boolean: 8, text: 16, json: 32, date: 64 } as const;

/** One of the {@link KIND} bits. */
export type KindBit = (typeof KIND)[keyof typeof KIND];

/**
 * COPY text format of the rows: 'csv' = `COPY … (FORMAT csv)` (unquoted empty = NULL, `""` = empty string),
 * 'text' = `COPY … (FORMAT text)` (`\N` = NULL, backslash escapes).
 */
export type CopyFormat = 'text' | 'csv';

/** How the rows of a report are to be written, decided once the columns are known (pages/rows-plan.ts). */
export interface RowsPlan {
  /** Record the kinds of every value (type inference of a new target needs them; skipping it is faster). */
  inspect: boolean;
  /**
   * Write COPY binary rows, a field per column encoded by `encodings[k]` (COPY column order), with timestamps written
   * without offset read in `timezone`. Ignored by sources that cannot (`writesBinary` false).
   */
  binary?: { encodings: readonly BinaryEncoding[]; timezone: string } | undefined;
  /**
   * Set when a column's type is known before COPY (an existing or declared column): every value of such a column is
   * checked where it is examined, and one the column would change fails the run (value-fit.ts).
   */
  fit?: ValueFit | undefined;
}

/** The loader's plan: called once per pass, synchronously, with the report's raw column names, before any row. */
export type PlanRows = (columns: readonly string[]) => RowsPlan;

/**
 * The rows of one report, pulled by the loader: open(plan) — the source learns the columns and asks the plan how to
 * write the rows before any row is decoded — then rows(), then kinds(); close() always. restart() begins a second
 * pass from the first row (then open() and rows() again): the loader's fall-back after a binary COPY failed.
 */
export interface RowSource {
  readonly copyFormat: CopyFormat;
  /** Whether the rows can be written in COPY binary format (a plan's `binary` is ignored otherwise). */
  readonly writesBinary: boolean;
  /**
   * Set when the output type fixes the table's shape (lines, one document per page; docs/loaded-tables.md "Output
   * types"): the target's columns in table order with their PostgreSQL types. open() then returns the same names in
   * COPY order, and no type is inferred.
   */
  readonly fixedColumns?: readonly { readonly name: string; readonly type: string }[] | undefined;
  /**
   * Reads until the report's columns are known (the first page's header or first row), asking `plan` then.
   * @returns the raw report column names in row order, or undefined for a report with no rows and no header
   * @throws what reading throws (fetch and parse errors, AbortedError)
   */
  open(plan: PlanRows): Promise<readonly string[] | undefined>;
  /** The format rows() writes in, known after open(): {@link copyFormat}, or 'binary' when the plan chose it. */
  readonly format: CopyFormat | 'binary';
  /**
   * The rows, in order: each Buffer holds whole rows, in {@link format} and column order (text rows end in \n; binary
   * rows are field count, then length and bytes per field, with no stream header or trailer).
   * @throws fetch and parse errors naming page and row, AbortedError; BinaryValueUnsupported in binary format
   */
  rows(): AsyncIterable<Buffer>;
  /** Starts a second pass at the report's first row, with a fresh decoder; open() and rows() are called again. */
  restart(): Promise<void>;
  /**
   * Per column: OR of {@link KIND} bits over all non-null values; complete once rows() of an inspecting plan ran out.
   */
  kinds(): readonly number[];
  /** The 1-based page that holds the 1-based row of the report (for error messages). */
  pageOfRow(row: number): number;
  /** The rows of the report before 1-based page `page` (for error messages: a row of the page and of the run). */
  rowsBeforePage(page: number): number;
  /**
   * The 1-based row of the report whose COPY input holds 1-based line `line`, as PostgreSQL counts lines in an
   * error's context: in csv format a line break inside a quoted value counts as a line. Unset: line = row.
   */
  rowOfCopyLine?(line: number): number;
  /** Stops reading and frees what is held (an open page stream). Safe at any time, and more than once. */
  close(): Promise<void>;
}
