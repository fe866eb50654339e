/**
 * The page loop of the text output types (docs/report-export-service.md "Output page shapes", "Output types"): strip
 * the byte order mark, read the header line every page repeats (txt, txt_cstr), then hand each record that
 * {@link RecordScanner} splits off to the subclass, which writes its COPY row. Records cut off by a chunk are carried.
 */
import type { OutputType } from '../vocabulary.ts';
import type { CopyFormat } from '../warehouse/row-source.ts';
import type { PageDecoder, PageMeta } from './page-decoder.ts';
import { ChunkCarry } from './carry.ts';
import { CopyOutput } from './copy-text.ts';
import { BOM_MAX_BYTES, bomLength, LF } from './bytes.ts';
import { CstrError, decodeCstrText } from './cstr.ts';
import { PageFormatError } from './errors.ts';
import { NEED_MORE, RecordScanner, type Quoting } from './txt-fields.ts';
import { txtFieldIndex, valueTooLargeError, type DecoderLimits } from './value-limit.ts';
import { PlanHolder, type PlanRows, type RowsPlan } from './rows-plan.ts';
import type { ValueFit } from '../warehouse/value-fit.ts';

const LF_BUFFER = Buffer.from([LF]);

/** Progress through one page: records (lines) done, the header included; page offset of the scanned buffer. */
export interface RecordPageState {
  page: number;
  line: number;
  offset: number;
}

/** Base of the text decoders; see the file comment. */
export abstract class TextRecordsDecoder implements PageDecoder {
  abstract readonly outputType: OutputType;
  readonly copyFormat: CopyFormat = 'text';
  readonly writesBinary: boolean = false;
  format: CopyFormat | 'binary' = 'text';
  abstract readonly columns: readonly string[] | undefined;
  kinds: number[] = [];
  inspect = true;
  /** The plan's value checks (rows-plan.ts), when a column's type is known before COPY. */
  protected fit: ValueFit | undefined = undefined;
  rows = 0;
  protected readonly plan = new PlanHolder();
  protected readonly out = new CopyOutput();
  protected readonly scanner: RecordScanner;
  /** A quoted value decoded (cstr) or unquoted (csv), grown as needed. */
  protected scratch = Buffer.alloc(1024);
  protected readonly quoting: Quoting;
  private readonly maxValueBytes: number;
  private readonly hasHeader: boolean;

  /** @param hasHeader whether every page begins with a header line of the column names */
  constructor(quoting: Quoting, limits: DecoderLimits, hasHeader: boolean) {
    this.quoting = quoting;
    this.scanner = new RecordScanner(quoting);
    this.maxValueBytes = limits.maxValueBytes;
    this.hasHeader = hasHeader;
  }

  planRows(plan: PlanRows): void {
    this.plan.set(plan);
  }

  /** The row that errors name for the record after `st.line` records: data rows count from 1 after the header. */
  protected rowOf(st: RecordPageState): number {
    return this.hasHeader ? st.line : st.line + 1;
  }

  /**
   * Writes the COPY row of the record just scanned (fields in `scanner`, indexes into b, starting at b[at]).
   * @returns false for a record that is skipped, not counted as a line (an empty line of txt, txt_cstr)
   */
  protected abstract record(b: Buffer, at: number, st: RecordPageState): boolean;

  /** Page 1's header told the columns: the plan is asked. */
  protected learnColumns(names: string[]): RowsPlan {
    const plan = this.plan.ask(names);
    this.kinds = names.map(() => 0);
    this.inspect = plan.inspect;
    this.fit = plan.fit;
    return plan;
  }

  /** The rows to hand out now (`end`: at the end of the page, all of them). */
  protected takeRows(end: boolean): Buffer | undefined {
    return end ? this.out.take() : this.out.takeFull();
  }

  async *decodePage(body: AsyncIterable<Uint8Array>, page: number, _meta?: PageMeta): AsyncGenerator<Buffer> {
    const st: RecordPageState = { page, line: 0, offset: 0 };
    const carry = new ChunkCarry(this.maxValueBytes, (held, bytes) => {
      const column = !this.hasHeader
        ? undefined
        : st.line === 0
          ? 'the header line'
          : this.quoting === 'csv'
            ? this.columns?.[txtFieldIndex(held)]
            : undefined;
      throw valueTooLargeError({ page, row: Math.max(1, this.rowOf(st)), column, bytes, limit: this.maxValueBytes });
    });
    let bomDone = false;
    for await (const chunk of body) {
      let buf = carry.pushStitched(chunk);
      if (buf === undefined) continue;
      if (!bomDone && buf.length < BOM_MAX_BYTES) {
        carry.keep(buf);
        continue;
      }
      while (buf !== undefined) {
        let start = 0;
        if (!bomDone) {
          start = bomLength(buf);
          bomDone = true;
        }
        const consumed = this.consume(buf, start, st);
        st.offset += consumed;
        buf = carry.next(buf, consumed);
        // Before the next scan: rows may be a view of the scanned buffer (txt).
        const rows = this.takeRows(false);
        if (rows !== undefined) yield rows;
      }
    }
    let rest = carry.finish();
    if (rest !== undefined && !bomDone) {
      const bom = bomLength(rest);
      st.offset += bom;
      rest = rest.subarray(bom);
    }
    if (rest !== undefined && rest.length > 0) {
      // The last line may lack its line end: give it one, then everything must be consumed.
      const buf = Buffer.concat([rest, LF_BUFFER]);
      const consumed = this.consume(buf, 0, st);
      if (consumed < buf.length) {
        throw new PageFormatError('page ends inside a quoted field', {
          page,
          row: Math.max(1, this.rowOf(st)),
          offset: st.offset + consumed,
        });
      }
    }
    const rows = this.takeRows(true);
    if (rows !== undefined) yield rows;
  }

  /** Scans whole records from b[i] (the header first, when due); returns the index after the last whole one. */
  private consume(b: Buffer, i: number, st: RecordPageState): number {
    const sc = this.scanner;
    sc.page = st.page;
    sc.offset = st.offset;
    if (this.hasHeader && st.line === 0) {
      sc.row = undefined;
      const next = sc.scan(b, i, b.length);
      if (next === NEED_MORE) return i;
      this.header(b, i, st);
      st.line++;
      i = next;
    }
    return this.records(b, i, st);
  }

  /** Scans and writes records from b[i]; returns the index after the last whole one. */
  protected records(b: Buffer, i: number, st: RecordPageState): number {
    const n = b.length;
    const sc = this.scanner;
    while (i < n) {
      sc.row = this.rowOf(st);
      const next = sc.scan(b, i, n);
      if (next === NEED_MORE) break;
      if (this.record(b, i, st)) st.line++;
      i = next;
    }
    return i;
  }

  /** The header line: page 1's names become the columns, later pages' must equal them. */
  private header(b: Buffer, at: number, st: RecordPageState): void {
    const sc = this.scanner;
    const names: string[] = [];
    for (let k = 0; k < sc.count; k++) names.push(this.fieldText(b, k, st, undefined));
    if (this.columns === undefined) {
      this.learnColumns(names);
      return;
    }
    if (names.length !== this.columns.length || names.some((n, k) => n !== this.columns![k])) {
      throw new PageFormatError(
        `header ${JSON.stringify(names)} differs from page 1's ${JSON.stringify(this.columns)}`,
        { page: st.page, offset: st.offset + at },
      );
    }
  }

  /** Field k of the scanned record as a string: unquoted, its escapes decoded. */
  private fieldText(b: Buffer, k: number, st: RecordPageState, row: number | undefined): string {
    const sc = this.scanner;
    const s = sc.start[k]!;
    const e = sc.end[k]!;
    if (sc.escaped[k] === 0) return b.toString('utf8', s, e);
    if (this.quoting === 'csv') return b.toString('utf8', s, e).replaceAll('""', '"');
    return this.scratch.toString('utf8', 0, this.decodeQuoted(b, s, e, st, row, k));
  }

  /**
   * Decodes the cstr-quoted value b[s..e) of field `k` into `scratch`; returns its length.
   * @throws PageFormatError naming the value's {@link label}
   */
  protected decodeQuoted(
    b: Buffer,
    s: number,
    e: number,
    st: RecordPageState,
    row: number | undefined,
    k: number,
  ): number {
    if (this.scratch.length < e - s) this.scratch = Buffer.alloc(Math.max(e - s, this.scratch.length * 2));
    try {
      return decodeCstrText(b, s, e, this.scratch);
    } catch (err) {
      if (!(err instanceof CstrError)) throw err;
      throw new PageFormatError(`${this.label(k, row)}: ${err.message}`, {
        page: st.page,
        row,
        offset: st.offset + err.index,
      });
    }
  }

  /**
   * Whether the record just scanned has the header's field count; false for an empty line (skipped).
   * @throws PageFormatError for any other count
   */
  protected hasHeaderFields(at: number, st: RecordPageState): boolean {
    const sc = this.scanner;
    const ncols = this.columns!.length;
    if (sc.count === ncols) return true;
    if (sc.count === 1 && sc.quoted[0] === 0 && sc.start[0] === sc.end[0] && ncols > 1) return false;
    throw new PageFormatError(`${sc.count} fields, the header has ${ncols}`, {
      page: st.page,
      row: st.line,
      offset: st.offset + at,
    });
  }

  /** How errors name field k of a record: its column (by default) or, in the header, the field. */
  protected label(k: number, row: number | undefined): string {
    const column = row === undefined ? undefined : this.columns?.[k];
    return column === undefined ? `field ${k + 1}` : `column "${column}"`;
  }
}
