/**
 * What every page decoder is (docs/report-export-service.md "Output page shapes"): page bytes in, whole rows in a PostgreSQL COPY format out,
 * with the report's columns and the kinds of their values for the loader's row source (warehouse/row-source.ts).
 */
import type { OutputType } from '../vocabulary.ts';
import type { CopyFormat } from '../warehouse/row-source.ts';
import type { PlanRows } from './rows-plan.ts';

/** What the server said about a page besides its bytes. */
export interface PageMeta {
  /** The page answer's Content-Type header, as sent (undefined when absent). */
  contentType?: string | undefined;
}

/** A column whose type the output type fixes (docs/loaded-tables.md "Output types"), as the target table gets it. */
export interface FixedColumn {
  readonly name: string;
  /** PostgreSQL type, e.g. `integer`, `text[]`, `jsonb`, `xml`, `bytea`. */
  readonly type: string;
}

/** Decodes the pages of one run, in order, into COPY rows. One instance per run; not reentrant. */
export interface PageDecoder {
  readonly outputType: OutputType;
  /** 'csv' for txt (pass-through; unquoted empty = NULL, "" = empty string), 'text' for json/json_compact/xml_query. */
  readonly copyFormat: CopyFormat;
  /** Raw report column names in output column order; undefined until the first page's header / first row is read. */
  readonly columns: readonly string[] | undefined;
  /** Per column: OR of {@link KIND} bits over all non-null values seen while `inspect` was on. */
  readonly kinds: readonly number[];
  /** Whether the kinds of the values are recorded: as the plan said (true when unplanned). */
  readonly inspect: boolean;
  /** Rows yielded so far over all pages. */
  readonly rows: number;
  /**
   * Set for the output types whose table shape is fixed (lines, documents per page): the target's columns in table
   * order with their types; `columns` then names the same columns in COPY order and is known before any page.
   */
  readonly fixedColumns?: readonly FixedColumn[];
  /**
   * Decodes one page. Yields Buffers in COPY format, in `columns` order, one row per line (ending in \n); each holds
   * only whole rows, except from the one-row-per-page decoders (xml, documents), which stream their page's row in
   * parts so that a page is never held whole. A yielded Buffer is never written to again by the decoder, except the
   * document decoder's content Buffers, reused 32 yields later (document-decoder.ts RING): use or copy a Buffer
   * before pulling that many more, as COPY does.
   * @param body the page body as it arrives (chunks of any size, BOM included for txt)
   * @param page the page number, 1-based (docs/report-export-service.md "Endpoints" #3), used in errors
   * @param meta the page answer's headers (documents check the Content-Type)
   * @throws PageFormatError (code PAGE_FORMAT, not retryable) naming page, row (1-based within the page) and
   *   what is wrong: txt header differs from page 1's, wrong field count, JSON syntax error (with byte offset),
   *   a JSON row key the first row did not have, XML not well-formed, NUL in a value.
   */
  decodePage(body: AsyncIterable<Uint8Array>, page: number, meta?: PageMeta): AsyncGenerator<Buffer>;
  /** Whether this decoder can write COPY binary format (txt, json, json_compact); the others ignore a plan's `binary`. */
  readonly writesBinary: boolean;
  /**
   * Step 1 of the life cycle (rows-plan.ts): the loader's plan, before the first page. The decoder asks it once, when
   * it knows the columns and before it decodes a row: whether to record the kinds of the values (`inspect`) and, for
   * a decoder that `writesBinary`, whether to write binary rows (field count, then length and bytes per field; no
   * stream header or trailer; a value an encoding does not take throws BinaryValueUnsupported). Unplanned, a decoder
   * inspects every value and writes its text format.
   * @throws Error when called after the columns were learned (a decoder is used for one pass)
   */
  planRows(plan: PlanRows): void;
  /** The format the rows are written in: `copyFormat`, or 'binary' once the plan chose it. */
  readonly format: CopyFormat | 'binary';
}
