/**
 * txt pages -> PostgreSQL CSV (docs/report-export-service.md "Output page shapes", txt): a BOM, a header line that
 * every page repeats, one row per line; text quoted with inner quotes doubled, NULL an empty bare field, empty string
 * "". COPY ... (FORMAT csv) reads exactly this, so the fast path passes rows through: it finds record ends, checks the
 * field count, classifies fields while `inspect` is on, checks for bytes no text takes (unfit-bytes.ts) and ends every
 * record with \n (CRLF records are copied without the CR). In binary format the general path splits each record into
 * fields (txt-fields.ts), written by the columns' encoders.
 */
import { BARE_END, COMMA, CR, LF, QUOTE } from './bytes.ts';
import { PageFormatError } from './errors.ts';
import { DEFAULT_MAX_VALUE_BYTES, type DecoderLimits } from './value-limit.ts';
import { classifyBare, classifyIsoText, KIND } from './kinds.ts';
import { BinaryValueUnsupported } from '../copy-binary/format.ts';
import { BinaryFieldWriter, FIELD_OVERHEAD, REFUSED } from '../copy-binary/field-writer.ts';
import { TextRecordsDecoder, type RecordPageState } from './text-records.ts';
import { textFits, unfitBytesError } from './unfit-bytes.ts';
import type { RowsPlan } from './rows-plan.ts';
import { CopyLines } from './copy-lines.ts';

/** The txt decoder; see the file comment. */
export class TxtPageDecoder extends TextRecordsDecoder {
  readonly outputType = 'txt' as const;
  override readonly copyFormat = 'csv' as const;
  override readonly writesBinary = true;
  override format: 'csv' | 'binary' = 'csv';
  columns: string[] | undefined = undefined;
  /** Rows of the last scan as a view of its buffer, when nothing had to be copied. */
  private view: Buffer | undefined;
  private binary: BinaryFieldWriter | undefined;
  /** The rows written with line breaks inside a value, for {@link rowOfCopyLine}. */
  private readonly lines = new CopyLines();

  constructor(limits: DecoderLimits = { maxValueBytes: DEFAULT_MAX_VALUE_BYTES }) {
    super('csv', limits, true);
  }

  /** The run's row whose csv input holds COPY's line `line` (copy-lines.ts; binary rows are one line each). */
  rowOfCopyLine(line: number): number {
    return this.lines.rowOfLine(line);
  }

  protected override learnColumns(names: string[]): RowsPlan {
    this.columns = names;
    const plan = super.learnColumns(names);
    if (plan.binary) {
      this.binary = new BinaryFieldWriter(plan.binary.encodings, plan.binary.timezone);
      this.format = 'binary';
      this.inspect = false;
    }
    return plan;
  }

  protected override takeRows(end: boolean): Buffer | undefined {
    const v = this.view;
    this.view = undefined;
    return v ?? (this.binary && !end ? this.out.takeFull() : this.out.take());
  }

  protected override records(b: Buffer, i: number, st: RecordPageState): number {
    if (this.binary) return super.records(b, i, st);
    // The row count is kept here, once per scan: code after the scan's loop would first run after V8 optimized the
    // loop, without type feedback, and leave the optimized code at every chunk's end.
    const before = st.line;
    const rowsBefore = this.rows;
    const end = this.scan(b, i, st);
    this.rows += st.line - before;
    // Rows pass through to COPY, which checks the encoding line by line and so names no column: check here first.
    if (end > i && !textFits(b, i, end)) {
      const err = unfitBytesError(b, i, end, {
        page: st.page,
        firstRow: rowsBefore + 1,
        firstRowOfPage: before,
        bufferOffset: st.offset,
        columns: this.columns!,
      });
      if (err) throw err;
    }
    return end;
  }

  /** Fast path: whole records from b[i] to the output (see the file comment); returns the index after the last. */
  private scan(b: Buffer, i: number, st: RecordPageState): number {
    const n = b.length;
    const ncols = this.columns!.length;
    const inspect = this.inspect;
    const kinds = this.kinds;
    const fit = this.fit;
    const out = this.out;
    let spanStart = i;
    let consumed = i;
    let row = st.line;
    // The run's row of page row `row`: rows counts the run's rows before this scan, st.line the page's.
    const rowBase = this.rows - st.line;
    records: while (i < n) {
      const recStart = i;
      let field = 0;
      let breaks = 0;
      for (;;) {
        if (i >= n) break records;
        let c = b[i]!;
        if (c === QUOTE) {
          const qs = i + 1;
          let doubled = false;
          let j = i + 1;
          for (;;) {
            // Short texts are the rule: a plain loop beats indexOf's call cost up to a few dozen bytes. A line break
            // inside is counted: COPY counts it as a line (copy-lines.ts).
            let q = j;
            const stop = Math.min(n, j + 48);
            let x = 0;
            // Most bytes lie above the quote: one comparison each.
            while (q < stop && ((x = b[q]!) > QUOTE || (x !== QUOTE && x !== LF))) q++;
            if (q < stop && x === LF) {
              breaks++;
              j = q + 1;
              continue;
            }
            if (q === stop) {
              q = stop < n ? b.indexOf(QUOTE, stop) : -1;
              for (let m = q < 0 ? -1 : b.indexOf(LF, stop); m >= 0 && m < q; m = b.indexOf(LF, m + 1)) breaks++;
            }
            if (q < 0 || q + 1 >= n) break records;
            if (b[q + 1] === QUOTE) {
              doubled = true;
              j = q + 2;
              continue;
            }
            i = q + 1;
            break;
          }
          c = b[i]!;
          if (inspect && field < ncols) kinds[field]! |= doubled ? KIND.text : classifyIsoText(b, qs, i - 1);
          if (fit !== undefined && field < ncols && fit.onText[field] !== 0) {
            if (doubled) fit.check(field, this.scratch, 0, this.unquote(b, qs, i - 1), true, st.page, row);
            else fit.check(field, b, qs, i - 1, true, st.page, row);
          }
        } else {
          const s = i;
          while (BARE_END[c] === 0) {
            if (++i >= n) break records;
            c = b[i]!;
          }
          if (c === QUOTE) {
            throw new PageFormatError(`field ${field + 1}: quote inside an unquoted field`, {
              page: st.page,
              row,
              offset: st.offset + i,
            });
          }
          if (inspect && i > s && field < ncols) kinds[field]! |= classifyBare(b, s, i);
          if (fit !== undefined && i > s && field < ncols && fit.onNumber[field] !== 0)
            fit.check(field, b, s, i, false, st.page, row);
        }
        field++;
        if (c === COMMA) {
          i++;
          continue;
        }
        const contentEnd = i;
        let crlf = false;
        if (c === LF) {
          i++;
        } else if (c === CR) {
          if (i + 1 >= n) break records;
          if (b[i + 1] !== LF)
            throw new PageFormatError('carriage return without line feed outside quotes', {
              page: st.page,
              row,
              offset: st.offset + i,
            });
          i += 2;
          crlf = true;
        } else {
          throw new PageFormatError(`field ${field}: unexpected byte 0x${c.toString(16)} after a closing quote`, {
            page: st.page,
            row,
            offset: st.offset + i,
          });
        }
        if (field !== ncols) {
          if (field === 1 && contentEnd === recStart && ncols > 1) {
            // An empty line cannot be a row of several columns: skip it.
            this.emitCopy(b, spanStart, recStart, false);
            spanStart = i;
            break;
          }
          throw new PageFormatError(`${field} fields, the header has ${ncols}`, {
            page: st.page,
            row,
            offset: st.offset + recStart,
          });
        }
        st.line = ++row;
        if (breaks !== 0) this.lines.note(rowBase + row, breaks);
        if (crlf) {
          this.emitCopy(b, spanStart, contentEnd, true);
          spanStart = i;
        }
        break;
      }
      consumed = i;
    }
    if (consumed > spanStart) {
      if (out.pos !== out.start) this.emitCopy(b, spanStart, consumed, false);
      else this.view = b.subarray(spanStart, consumed);
    }
    return consumed;
  }

  /**
   * General path, COPY binary format: the record just scanned, each field by its column's encoder; an unquoted empty
   * field is NULL, a quoted one with doubled quotes is unquoted first.
   * @throws BinaryValueUnsupported for a value the encoder does not take (the loader then loads in text format)
   */
  protected record(b: Buffer, at: number, st: RecordPageState): boolean {
    const sc = this.scanner;
    const ncols = this.columns!.length;
    if (!this.hasHeaderFields(at, st)) return false;
    const w = this.binary!;
    const fit = this.fit;
    const out = this.out;
    out.reserve(sc.contentEnd - at + 2 + ncols * FIELD_OVERHEAD);
    const buf = out.buf;
    let p = w.rowStart(buf, out.pos);
    for (let k = 0; k < ncols; k++) {
      const s = sc.start[k]!;
      const e = sc.end[k]!;
      const quoted = sc.quoted[k] === 1;
      if (!quoted && s === e) p = w.writeNull(buf, p);
      else if (sc.escaped[k] === 0) {
        if (fit !== undefined && (quoted ? fit.onText[k] : fit.onNumber[k]) !== 0)
          fit.check(k, b, s, e, quoted, st.page, st.line);
        p = w.write(buf, p, k, b, s, e);
      } else {
        const len = this.unquote(b, s, e);
        if (fit !== undefined && fit.onText[k] !== 0) fit.check(k, this.scratch, 0, len, true, st.page, st.line);
        p = w.write(buf, p, k, this.scratch, 0, len);
      }
      if (p === REFUSED) throw new BinaryValueUnsupported(k, st.page, st.line);
    }
    out.pos = p;
    this.rows++;
    return true;
  }

  /** A quoted field's content b[s..e) with each doubled quote made single, into `scratch`; returns its length. */
  private unquote(b: Buffer, s: number, e: number): number {
    if (this.scratch.length < e - s) this.scratch = Buffer.allocUnsafe(2 * (e - s));
    const out = this.scratch;
    let p = 0;
    for (let k = s; k < e; k++) {
      out[p++] = b[k]!;
      if (b[k] === QUOTE) k++;
    }
    return p;
  }

  /** Copies b[s..e) to the output, plus a \n when `lf`. */
  private emitCopy(b: Buffer, s: number, e: number, lf: boolean): void {
    const out = this.out;
    const len = e - s;
    out.reserve(len + 1);
    let p = out.pos;
    if (len > 64) {
      b.copy(out.buf, p, s, e);
      p += len;
    } else {
      const ob = out.buf;
      for (let k = s; k < e; k++) ob[p++] = b[k]!;
    }
    if (lf) out.buf[p++] = LF;
    out.pos = p;
  }
}
