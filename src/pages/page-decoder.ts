/**
 * What every page decoder is (docs/report-export-service.md "Output page shapes"): page bytes in, whole rows in a
 * PostgreSQL COPY format out, with the report's columns and the kinds of their values (warehouse/row-source.ts).
 */
import type { OutputType } from '../vocabulary.ts';
import type { CopyFormat } from '../warehouse/row-source.ts';
import type { PlanRows } from './rows-plan.ts';

/** What the server said about a page besides its bytes: the Content-Type header as sent. */
export interface PageMeta {
  contentType?: string | undefined;
}

/** A column whose type the output type fixes (docs/loaded-tables.md "Output types"); `type` is PostgreSQL's. */
export interface FixedColumn {
  readonly name: string;
  readonly type: string;
}

/** Decodes the pages of one run, in order, into COPY rows. One instance per run; not reentrant. */
export interface PageDecoder {
  readonly outputType: OutputType;
  /** 'csv' for txt (pass-through; unquoted empty = NULL, "" = empty string), 'text' for the others. */
  readonly copyFormat: CopyFormat;
  /** The format the rows are written in: `copyFormat`, or 'binary' once the plan chose it. */
  readonly format: CopyFormat | 'binary';
  /** Whether the decoder can write COPY binary format (txt, json, json_compact, xml_query). */
  readonly writesBinary: boolean;
  /** Report column names in COPY order; undefined until page 1's header or first row is read. */
  readonly columns: readonly string[] | undefined;
  /** Output types whose table shape is fixed (lines, documents): the target's columns in table order. */
  readonly fixedColumns?: readonly FixedColumn[];
  /** Per column: OR of {@link KIND} bits over the non-null values seen while `inspect` was on. */
  readonly kinds: readonly number[];
  /** Whether the kinds of the values are recorded, as the plan said (true when unplanned). */
  readonly inspect: boolean;
  /** Rows yielded so far over all pages. */
  readonly rows: number;
  /**
   * The 1-based row of the run whose COPY input holds 1-based line `line` as PostgreSQL counts it (csv: a line break
   * inside a quoted value is a line too); unset where every row is one line.
   */
  rowOfCopyLine?(line: number): number;
  /**
   * Decodes one page into Buffers of whole rows in `columns` order, each row ending in \n; the one-row-per-page
   * decoders (xml, documents) stream their row in parts. A yielded Buffer is not written again, except the document
   * decoder's, reused 32 yields later (document-decoder.ts RING): use or copy it before, as COPY does.
   * @param body the page body as it arrives (chunks of any size, BOM included)
   * @param page 1-based (docs/report-export-service.md "Endpoints" #3), for errors
   * @param meta the page answer's headers (documents check the Content-Type)
   * @throws PageFormatError (PAGE_FORMAT, not retryable) naming page, row (1-based within the page) and what is wrong
   */
  decodePage(body: AsyncIterable<Uint8Array>, page: number, meta?: PageMeta): AsyncGenerator<Buffer>;
  /**
   * The loader's plan (rows-plan.ts), before the first page; asked once the columns are known: whether to record the
   * kinds (`inspect`) and, if `writesBinary`, whether to write binary rows (field count, then length and bytes per
   * field, no header or trailer; a value an encoding does not take throws BinaryValueUnsupported).
   * @throws Error when called after the columns were learned
   */
  planRows(plan: PlanRows): void;
}
