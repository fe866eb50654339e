/**
 * The contract between whatever produces a report's rows (the page decoders of src/pages, joined over the pages
 * of one report job by the pipeline) and the loader: rows arrive as whole lines in a PostgreSQL COPY format, the
 * report's column names are known before the first row is loaded, and the kinds of every value — the input of
 * type inference — are known after the last. The loader pulls; nothing is buffered whole.
 */
import type { BinaryEncoding } from '../copy-binary/format.ts';

/**
 * Bit flags of the kinds of value seen in a column; a column's kind is the OR over its non-null values.
 * - integer: an integer that fits int64
 * - numeric: a decimal, or an integer beyond int64
 * - timestamp: txt bare `dd.mm.yyyy hh:mm:ss.mmm`, or a JSON/XML string in ISO 8601 with a UTC offset
 * - boolean: JSON true/false
 * - text: any other string (in txt: any quoted field, whatever it contains)
 * - json: a JSON object/array value
 */
export const KIND = { integer: 1, numeric: 2, timestamp: 4, boolean: 8, text: 16, json: 32 } as const;

/** One of the {@link KIND} bits. */
export type KindBit = (typeof KIND)[keyof typeof KIND];

/**
 * COPY format of the rows: 'csv' = `COPY … (FORMAT csv)` (unquoted empty = NULL, `""` = empty string),
 * 'text' = `COPY … (FORMAT text)` (`\N` = NULL, backslash escapes).
 */
export type CopyFormat = 'text' | 'csv';

/**
 * The rows of one report, pulled by the loader. Used once: open(), then rows(), then kinds(); close() always. A
 * source that can write COPY binary format may be switched to it between open() and rows(), and started over with
 * restart() (then open() and rows() again).
 */
export interface RowSource {
  readonly copyFormat: CopyFormat;
  /**
   * Set when the output type fixes the table's shape (lines, one document per page; README "Output types"): the
   * target's columns in table order with their PostgreSQL types. open() then returns the same names in COPY order,
   * and no type is inferred.
   */
  readonly fixedColumns?: readonly { readonly name: string; readonly type: string }[] | undefined;
  /**
   * Reads until the report's columns are known (the first page's header or first row).
   * @returns the raw report column names in row order, or undefined for a report with no rows and no header
   * @throws what reading throws (fetch and parse errors, AbortedError)
   */
  open(): Promise<readonly string[] | undefined>;
  /**
   * The rows, in order: each Buffer holds whole rows, each ending in \n, in {@link copyFormat} and column order.
   * @param inspect record the {@link KIND}s of every value (type inference needs them; skipping it is faster)
   * @throws fetch and parse errors naming page and row, AbortedError
   */
  rows(inspect: boolean): AsyncIterable<Buffer>;
  /**
   * Optional: makes rows() yield rows in COPY binary format (warehouse/copy-binary.ts: per row a field count,
   * per field a length and the bytes; no stream header or trailer), a field per column written by `encodings[k]`.
   * Called after open(), before rows(). rows() then throws BinaryValueUnsupported for a value an encoding does not
   * take; rows(true) is not available.
   * @param timezone the zone of timestamps written without offset (the load session's TimeZone)
   * @returns false when this source cannot (nothing changed: rows() stays in {@link copyFormat})
   */
  useBinary?(encodings: readonly BinaryEncoding[], timezone: string): boolean;
  /**
   * With useBinary: starts over at the report's first row in {@link copyFormat} (the loader's fall-back after a binary
   * COPY failed). open() and rows() are then called again.
   */
  restart?(): Promise<void>;
  /** Per column: OR of {@link KIND} bits over all non-null values; complete once rows(true) is exhausted. */
  kinds(): readonly number[];
  /** The 1-based page that holds the 1-based row of the report (for error messages). */
  pageOfRow(row: number): number;
  /** Stops reading and frees what is held (an open page stream). Safe at any time, and more than once. */
  close(): Promise<void>;
}
