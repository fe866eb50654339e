/**
 * The page loop of the text decoders that look at every field (txt_cstr, txt_all, txt_allcstr; docs/report-export-service.md "Output types"):
 * strip the byte order mark (docs/report-export-service.md "Output page shapes": 1 to 4 bytes), split the page into records with a
 * {@link RecordScanner}, hand each record to the subclass, which writes COPY text rows into `out`. A record that a
 * chunk cut off is carried to the next chunk (ChunkCarry), so memory stays flat whatever the page size.
 */
import type { OutputType } from '../vocabulary.ts';
import type { PageDecoder, PageMeta } from './page-decoder.ts';
import { BOM_MAX_BYTES, bomLength } from './bom.ts';
import { ChunkCarry } from './carry.ts';
import { CopyOutput } from './copy-text.ts';
import { LF } from './bytes.ts';
import { PageFormatError } from './errors.ts';
import { NEED_MORE, RecordScanner, scanRecord, type Quoting } from './txt-fields.ts';
import { valueTooLargeError, type DecoderLimits } from './value-limit.ts';
import { PlanHolder, type PlanRows } from './rows-plan.ts';

const LF_BUFFER = Buffer.from([LF]);

/** Progress through one page. */
export interface RecordPageState {
  page: number;
  /** Records (lines) completed in this page, the header included. */
  line: number;
  /** Page offset of the first byte of the buffer being scanned. */
  offset: number;
}

/** Base of the record-by-record text decoders; see the file comment. */
export abstract class TextRecordsDecoder implements PageDecoder {
  abstract readonly outputType: OutputType;
  readonly copyFormat = 'text' as const;
  readonly writesBinary = false;
  readonly format = 'text' as const;
  /** The loader's plan, asked when page 1's header told the columns (rows-plan.ts). */
  protected readonly plan = new PlanHolder();

  /** See {@link PageDecoder.planRows}: asked for `inspect` once the columns are known (this type writes text). */
  planRows(plan: PlanRows): void {
    this.plan.set(plan);
  }
  abstract readonly columns: readonly string[] | undefined;
  kinds: number[] = [];
  inspect = true;
  rows = 0;
  protected readonly out = new CopyOutput();
  protected readonly scanner: RecordScanner;
  private readonly maxValueBytes: number;

  /** @param limits a record held longer than `maxValueBytes` (report.maxValueBytes) fails the page */
  constructor(quoting: Quoting, limits: DecoderLimits) {
    this.scanner = new RecordScanner(quoting);
    this.maxValueBytes = limits.maxValueBytes;
  }

  /** The row number errors give the record after `st.line` records (default: the line number). */
  protected nextRow(st: RecordPageState): number {
    return st.line + 1;
  }

  /**
   * Handles the record just scanned (fields in `this.scanner`, indexes into `b`): writes its COPY row, if any.
   * @param at index of the record's first byte in `b` (for error offsets)
   * @throws PageFormatError naming page, row and offset
   */
  protected abstract record(b: Buffer, at: number, st: RecordPageState): void;

  async *decodePage(body: AsyncIterable<Uint8Array>, page: number, _meta?: PageMeta): AsyncGenerator<Buffer> {
    const st: RecordPageState = { page, line: 0, offset: 0 };
    // A record cut off by a chunk is held until it ends: bounded by maxValueBytes as it grows (value-limit.ts), so a
    // page holding one enormous value costs at most about the limit.
    const carry = new ChunkCarry(this.maxValueBytes, (_held, bytes) => {
      throw valueTooLargeError({ page, row: this.nextRow(st), column: undefined, bytes, limit: this.maxValueBytes });
    });
    let bomDone = false;
    for await (const chunk of body) {
      // A record cut off by the chunk before is completed from the start of this one, the rest parsed in place
      // (carry.ts pushStitched), rather than joining the whole chunk to it.
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
        const held = buf.length - consumed;
        st.offset += consumed;
        buf = carry.next(buf, consumed);
        // An unfinished record is held until it ends: bound it, as the other text decoders do (value-limit.ts).
        if (buf === undefined && held > this.maxValueBytes) {
          throw valueTooLargeError({
            page,
            row: this.nextRow(st),
            column: undefined,
            bytes: held,
            limit: this.maxValueBytes,
          });
        }
        const rows = this.out.takeFull();
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
          row: st.line + 1,
          offset: st.offset + consumed,
        });
      }
    }
    this.endPage(st);
    const rows = this.out.take();
    if (rows !== undefined) yield rows;
  }

  /** Called after the last record of a page (a page without records included). */
  protected endPage(_st: RecordPageState): void {}

  /** Scans whole records from b[start]; returns the index after the last whole one. */
  private consume(b: Buffer, start: number, st: RecordPageState): number {
    const n = b.length;
    const sc = this.scanner;
    let i = start;
    while (i < n) {
      const next = scanRecord(sc, b, i, n, st.page, st.line + 1, st.offset);
      if (next === NEED_MORE) break;
      this.record(b, i, st);
      st.line++;
      i = next;
    }
    return i;
  }
}
