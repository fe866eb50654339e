/**
 * txt pages -> PostgreSQL CSV (docs/report-export-service.md "Output page shapes", txt): a BOM, a header line of column names that
 * every page repeats, then one row per line; text in double quotes with inner quotes doubled, numbers and
 * timestamps (dd.mm.yyyy hh:mm:ss.mmm) bare, NULL an empty bare field, empty string "".
 * COPY ... (FORMAT csv) reads exactly these semantics, so rows pass through unchanged: the decoder only
 * finds record ends (a line break inside quotes is data), checks the field count, classifies fields while
 * `inspect` is on, and normalises record ends to \n (PostgreSQL wants one line-end style for a whole COPY).
 * LF-terminated records leave as zero-copy views of the input; CRLF ones are copied without the CR.
 * In COPY binary format (when the plan chooses it, pages/rows-plan.ts) every field is converted by the column's encoder instead.
 */
import type { PageDecoder } from './page-decoder.ts';
import { BOM_MAX_BYTES, bomLength } from './bom.ts';
import { ChunkCarry } from './carry.ts';
import { CopyOutput } from './copy-text.ts';
import { CR, LF } from './bytes.ts';
import { PageFormatError } from './errors.ts';
import { DEFAULT_MAX_VALUE_BYTES, txtFieldIndex, valueTooLargeError, type DecoderLimits } from './value-limit.ts';
import { KIND, classifyNumber, isTxtTimestamp } from './kinds.ts';
import { BinaryValueUnsupported } from '../copy-binary/format.ts';
import { BinaryFieldWriter, FIELD_OVERHEAD, REFUSED } from '../copy-binary/field-writer.ts';
import { NEED_MORE, RecordScanner, scanRecord } from './txt-fields.ts';
import { PlanHolder, scanAcrossPlan, type PlanRows } from './rows-plan.ts';

const QUOTE = 0x22;
const COMMA = 0x2c;
const LF_BUFFER = Buffer.from([LF]);

/** Progress through one page. */
interface TxtPageState {
  page: number;
  /** Data rows completed in this page. */
  row: number;
  /** Page offset of the first byte of the buffer being scanned. */
  offset: number;
  bomDone: boolean;
  headerDone: boolean;
}

/** A header line: the names and where the line ends. */
interface HeaderLine {
  names: string[];
  /** Header bytes without the line end. */
  raw: Buffer;
  /** Index after the line end. */
  end: number;
}

/** Kind of a bare (unquoted, non-empty) txt field: integer, numeric, timestamp, else text. */
export function classifyBare(b: Uint8Array, s: number, e: number): number {
  const c = b[s]!;
  if (e - s >= 19 && b[s + 2] === 0x2e && isTxtTimestamp(b, s, e)) return KIND.timestamp;
  if ((c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e) {
    const k = classifyNumber(b, s, e);
    if (k !== 0) return k;
  }
  return KIND.text;
}

/**
 * Parses a CSV line starting at b[i]: names unquoted ("" -> "). Returns undefined when the line end is not
 * in `b` yet; throws on a stray quote.
 */
function parseHeaderLine(b: Buffer, i: number, st: TxtPageState): HeaderLine | undefined {
  const start = i;
  const n = b.length;
  const names: string[] = [];
  for (;;) {
    if (i >= n) return undefined;
    let name: string;
    if (b[i] === QUOTE) {
      let j = i + 1;
      for (;;) {
        const q = b.indexOf(QUOTE, j);
        if (q < 0 || q + 1 >= n) return undefined;
        if (b[q + 1] === QUOTE) {
          j = q + 2;
          continue;
        }
        name = b.toString('utf8', i + 1, q).replaceAll('""', '"');
        i = q + 1;
        break;
      }
    } else {
      const s = i;
      while (i < n && b[i] !== COMMA && b[i] !== LF && b[i] !== CR) {
        if (b[i] === QUOTE)
          throw new PageFormatError('header: quote inside an unquoted column name', {
            page: st.page,
            offset: st.offset + i,
          });
        i++;
      }
      if (i >= n) return undefined;
      name = b.toString('utf8', s, i);
    }
    names.push(name);
    const c = b[i];
    if (c === COMMA) {
      i++;
      continue;
    }
    const contentEnd = i;
    if (c === CR) {
      if (i + 1 >= n) return undefined;
      if (b[i + 1] !== LF)
        throw new PageFormatError('header: carriage return without line feed', {
          page: st.page,
          offset: st.offset + i,
        });
      i += 2;
    } else if (c === LF) {
      i += 1;
    } else {
      throw new PageFormatError('header: unexpected byte after a closing quote', {
        page: st.page,
        offset: st.offset + i,
      });
    }
    return { names, raw: Buffer.from(b.subarray(start, contentEnd)), end: i };
  }
}

/** The txt decoder; see the file comment. Made by makePageDecoder('txt'). */
export class TxtPageDecoder implements PageDecoder {
  readonly outputType = 'txt' as const;
  readonly copyFormat = 'csv' as const;
  readonly writesBinary = true;
  columns: string[] | undefined = undefined;
  kinds: number[] = [];
  inspect = true;
  rows = 0;
  format: 'csv' | 'binary' = 'csv';
  private headerRaw: Buffer | undefined;
  private readonly out = new CopyOutput();
  /** Zero-copy rows of the last scan, when nothing had to be copied. */
  private view: Buffer | undefined;
  private readonly maxValueBytes: number;
  /** Set when the plan chose binary format: rows go out in COPY binary format, field by field. */
  private binary: BinaryFieldWriter | undefined;
  private records: RecordScanner | undefined;
  private scratch = Buffer.alloc(0);
  private readonly plan = new PlanHolder();
  /** Page 1's header was just read: the scan stopped there, so that the rows after it follow the plan. */
  private justLearned = false;

  constructor(limits: DecoderLimits = { maxValueBytes: DEFAULT_MAX_VALUE_BYTES }) {
    this.maxValueBytes = limits.maxValueBytes;
  }

  /** See {@link PageDecoder.planRows}. */
  planRows(plan: PlanRows): void {
    this.plan.set(plan);
  }

  async *decodePage(body: AsyncIterable<Uint8Array>, page: number): AsyncGenerator<Buffer> {
    const st: TxtPageState = { page, row: 0, offset: 0, bomDone: false, headerDone: false };
    const carry = new ChunkCarry(this.maxValueBytes, (held, bytes) => {
      const column = st.headerDone ? this.columns?.[txtFieldIndex(held)] : 'the header line';
      throw valueTooLargeError({ page, row: st.row + 1, column, bytes, limit: this.maxValueBytes });
    });
    for await (const chunk of body) {
      // A record cut off by the last chunk is completed from a small copy of this one's start; the rest is scanned in
      // place (carry.ts pushStitched).
      let buf = carry.pushStitched(chunk);
      if (buf === undefined) continue;
      if (!st.bomDone && buf.length < BOM_MAX_BYTES) {
        carry.keep(buf);
        continue;
      }
      while (buf !== undefined) {
        const consumed = this.consumeAll(buf, st);
        buf = carry.next(buf, consumed);
        // Before the next scan: a scan's rows may be a view of its buffer (takeRows). Binary rows are gathered.
        const rows = this.binary ? this.out.takeFull() : this.takeRows();
        if (rows !== undefined) yield rows;
      }
    }
    let rest = carry.finish();
    if (rest !== undefined && !st.headerDone) {
      // A page of fewer bytes than a BOM, or a BOM and nothing else: no header, no rows.
      if (!st.bomDone) {
        const bom = bomLength(rest);
        st.bomDone = true;
        st.offset += bom;
        rest = rest.subarray(bom);
      }
      if (rest.length === 0) rest = undefined;
    }
    if (rest !== undefined) {
      // The last line may lack its line end: give it one, then everything must be consumed.
      const buf = Buffer.concat([rest, LF_BUFFER]);
      const consumed = this.consumeAll(buf, st);
      if (consumed < buf.length) {
        throw new PageFormatError('page ends inside a quoted field', { page, row: st.row + 1, offset: st.offset });
      }
    }
    const rows = this.takeRows();
    if (rows !== undefined) yield rows;
  }

  /** consume() over the whole of `buf`, in the plan's format from the first row on (rows-plan.ts). */
  private consumeAll(buf: Buffer, st: TxtPageState): number {
    return scanAcrossPlan(
      buf,
      st,
      (b) => this.consume(b, st),
      () => {
        const learned = this.justLearned;
        this.justLearned = false;
        return learned;
      },
    );
  }

  private takeRows(): Buffer | undefined {
    const v = this.view;
    this.view = undefined;
    return v ?? this.out.take();
  }

  /** Strips the BOM and the header when due, scans records; returns the index after the last whole record. */
  private consume(buf: Buffer, st: TxtPageState): number {
    let i = 0;
    if (!st.bomDone) {
      i = bomLength(buf);
      st.bomDone = true;
    }
    if (!st.headerDone) {
      const header = parseHeaderLine(buf, i, st);
      if (header === undefined) return i;
      this.acceptHeader(header, st, i);
      st.headerDone = true;
      i = header.end;
      if (this.justLearned) return i;
    }
    // The scanners keep st.row current row by row; the decoder's count is kept here, once per chunk: code after a
    // scanner's loop would first run after V8 optimized the loop, without type feedback, and leave the optimized code
    // at every chunk's end (a deoptimization per chunk).
    const before = st.row;
    const end = this.binary ? this.scanBinary(buf, i, st) : this.scan(buf, i, st);
    this.rows += st.row - before;
    return end;
  }

  private acceptHeader(header: HeaderLine, st: TxtPageState, at: number): void {
    if (this.columns === undefined) {
      this.columns = header.names;
      this.kinds = header.names.map(() => 0);
      this.headerRaw = header.raw;
      const plan = this.plan.ask(header.names);
      this.inspect = plan.inspect;
      if (plan.binary) {
        this.binary = new BinaryFieldWriter(plan.binary.encodings, plan.binary.timezone);
        this.records = new RecordScanner('csv');
        this.format = 'binary';
        this.inspect = false;
      }
      this.justLearned = true;
      return;
    }
    if (this.headerRaw !== undefined && header.raw.equals(this.headerRaw)) return;
    const same = header.names.length === this.columns.length && header.names.every((n, k) => n === this.columns![k]);
    if (!same) {
      throw new PageFormatError(
        `header ${JSON.stringify(header.names)} differs from page 1's ${JSON.stringify(this.columns)}`,
        { page: st.page, offset: st.offset + at },
      );
    }
  }

  /**
   * Scans whole records from b[i]; passes them to the output (see the file comment). Returns the index
   * after the last whole record; the rest is an incomplete record for the next chunk.
   */
  private scan(b: Buffer, i: number, st: TxtPageState): number {
    const n = b.length;
    const ncols = this.columns!.length;
    const inspect = this.inspect;
    const kinds = this.kinds;
    const out = this.out;
    let spanStart = i;
    let consumed = i;
    let row = st.row;
    records: while (i < n) {
      const recStart = i;
      let field = 0;
      for (;;) {
        if (i >= n) break records;
        let c = b[i]!;
        if (c === QUOTE) {
          let j = i + 1;
          for (;;) {
            // Short texts are the rule: a plain loop beats indexOf's call cost up to a few dozen bytes.
            let q = j;
            const stop = Math.min(n, j + 48);
            while (q < stop && b[q] !== QUOTE) q++;
            if (q === stop) q = stop < n ? b.indexOf(QUOTE, stop) : -1;
            if (q < 0 || q + 1 >= n) break records;
            if (b[q + 1] === QUOTE) {
              j = q + 2;
              continue;
            }
            i = q + 1;
            break;
          }
          c = b[i]!;
          if (inspect && field < ncols) kinds[field]! |= KIND.text;
        } else {
          const s = i;
          while (c !== COMMA && c !== LF && c !== CR) {
            if (c === QUOTE) {
              throw new PageFormatError(`field ${field + 1}: quote inside an unquoted field`, {
                page: st.page,
                row: row + 1,
                offset: st.offset + i,
              });
            }
            if (++i >= n) break records;
            c = b[i]!;
          }
          if (inspect && i > s && field < ncols) kinds[field]! |= classifyBare(b, s, i);
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
              row: row + 1,
              offset: st.offset + i,
            });
          i += 2;
          crlf = true;
        } else {
          throw new PageFormatError(`field ${field}: unexpected byte 0x${c.toString(16)} after a closing quote`, {
            page: st.page,
            row: row + 1,
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
            row: row + 1,
            offset: st.offset + recStart,
          });
        }
        st.row = ++row;
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
   * {@link scan} for COPY binary format: each record split into fields (RecordScanner, the same checks and messages),
   * each field written by its column's encoder; an unquoted empty field is NULL.
   * @throws BinaryValueUnsupported for a value the encoder does not take (the loader then loads in text format)
   */
  private scanBinary(b: Buffer, i: number, st: TxtPageState): number {
    const n = b.length;
    const ncols = this.columns!.length;
    const w = this.binary!;
    const sc = this.records!;
    const out = this.out;
    let row = st.row;
    while (i < n) {
      const next = scanRecord(sc, b, i, n, st.page, row + 1, st.offset);
      if (next === NEED_MORE) break;
      if (sc.count !== ncols) {
        // An empty line cannot be a row of several columns: skip it.
        if (!(sc.count === 1 && sc.quoted[0] === 0 && sc.start[0] === sc.end[0] && ncols > 1)) {
          throw new PageFormatError(`${sc.count} fields, the header has ${ncols}`, {
            page: st.page,
            row: row + 1,
            offset: st.offset + i,
          });
        }
        i = next;
        continue;
      }
      st.row = ++row;
      out.reserve(sc.contentEnd - i + 2 + ncols * FIELD_OVERHEAD);
      const buf = out.buf;
      let p = w.rowStart(buf, out.pos);
      for (let k = 0; k < ncols; k++) {
        const s = sc.start[k]!;
        const e = sc.end[k]!;
        // An unquoted empty field is NULL; a quoted one with doubled quotes is unquoted first.
        if (sc.quoted[k] === 0 && s === e) p = w.writeNull(buf, p);
        else if (sc.escaped[k] === 0) p = w.write(buf, p, k, b, s, e);
        else p = w.write(buf, p, k, this.unquote(b, s, e), 0, this.scratchLength);
        if (p === REFUSED) throw new BinaryValueUnsupported(k, st.page, row);
      }
      out.pos = p;
      i = next;
    }
    return i;
  }

  private scratchLength = 0;

  /** A quoted field's content b[s..e) with each doubled quote made single, in `scratch`. */
  private unquote(b: Buffer, s: number, e: number): Buffer {
    if (this.scratch.length < e - s) this.scratch = Buffer.allocUnsafe(Math.max(1024, 2 * (e - s)));
    const out = this.scratch;
    let p = 0;
    for (let k = s; k < e; k++) {
      out[p++] = b[k]!;
      if (b[k] === QUOTE) k++;
    }
    this.scratchLength = p;
    return out;
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
