/**
 * txt_cstr pages -> COPY text rows (docs/report-export-service.md "Output types": "Text coded as C/Java string, detail component elements
 * only"): the txt shape (byte order mark, a header line that every page repeats, one row per line, text quoted,
 * numbers and timestamps bare, NULL an empty bare field) with every quoted value coded as a C/Java string literal,
 * decoded here (cstr.ts) so that a value loads exactly as the server's text was before coding.
 */
import { isUtf8 } from 'node:buffer';
import { writeEscapedBytes } from './copy-text.ts';
import { BACKSLASH, CR, LF, TAB } from './bytes.ts';
import { CstrError, decodeCstr } from './cstr.ts';
import { PageFormatError } from './errors.ts';
import { KIND } from './kinds.ts';
import { TextRecordsDecoder, type RecordPageState } from './text-records.ts';
import { classifyBare } from './txt-decoder.ts';
import type { DecoderLimits } from './value-limit.ts';

/** Whether b[s..e) holds a byte that needs decoding or COPY escaping. */
function plain(b: Uint8Array, s: number, e: number): boolean {
  for (let k = s; k < e; k++) {
    const c = b[k]!;
    if (c === BACKSLASH || c === LF || c === CR || c === TAB || c === 0) return false;
  }
  return true;
}

/** The txt_cstr decoder; see the file comment. Made by makePageDecoder('txt_cstr'). */
export class TxtCstrPageDecoder extends TextRecordsDecoder {
  readonly outputType = 'txt_cstr' as const;
  columns: string[] | undefined = undefined;
  private scratch = Buffer.alloc(1024);

  constructor(limits: DecoderLimits) {
    super('cstr', limits);
  }

  protected override nextRow(st: RecordPageState): number {
    return st.line;
  }

  protected record(b: Buffer, at: number, st: RecordPageState): void {
    const sc = this.scanner;
    if (st.line === 0) return this.header(b, at, st);
    const ncols = this.columns!.length;
    const row = st.line;
    if (sc.count !== ncols) {
      // An empty line cannot be a row of several columns: skip it.
      if (sc.count === 1 && sc.quoted[0] === 0 && sc.start[0] === sc.end[0] && ncols > 1) return;
      throw new PageFormatError(`${sc.count} fields, the header has ${ncols}`, {
        page: st.page,
        row,
        offset: st.offset + at,
      });
    }
    const out = this.out;
    const inspect = this.inspect;
    const kinds = this.kinds;
    out.reserve(2 * (sc.contentEnd - at) + ncols + 2);
    for (let k = 0; k < ncols; k++) {
      if (k > 0) out.buf[out.pos++] = TAB;
      const s = sc.start[k]!;
      const e = sc.end[k]!;
      if (sc.quoted[k] === 0) {
        if (s === e) {
          out.writeNull();
          continue;
        }
        if (inspect) kinds[k]! |= classifyBare(b, s, e);
        out.pos = writeEscapedBytes(b, s, e, out.buf, out.pos);
        continue;
      }
      if (inspect) kinds[k]! |= KIND.text;
      if (plain(b, s, e)) {
        b.copy(out.buf, out.pos, s, e);
        out.pos += e - s;
        continue;
      }
      const len = this.decodeValue(b, s, e, st, row, k);
      out.pos = writeEscapedBytes(this.scratch, 0, len, out.buf, out.pos);
    }
    out.buf[out.pos++] = LF;
    this.rows++;
  }

  /** Decodes a quoted value into `scratch`; returns its length. */
  private decodeValue(
    b: Buffer,
    s: number,
    e: number,
    st: RecordPageState,
    row: number | undefined,
    field: number,
  ): number {
    if (this.scratch.length < e - s) this.scratch = Buffer.alloc(Math.max(e - s, this.scratch.length * 2));
    try {
      const r = decodeCstr(b, s, e, this.scratch, 0);
      const column = this.columns?.[field] ?? `field ${field + 1}`;
      if (r.nul) {
        throw new PageFormatError(
          `column "${column}": the value holds a NUL character (\\0), which PostgreSQL text cannot store`,
          { page: st.page, row, offset: st.offset + s },
        );
      }
      if (r.byteEscapes && !isUtf8(this.scratch.subarray(0, r.end))) {
        throw new PageFormatError(`column "${column}": the octal or \\x escapes of the value do not form UTF-8 text`, {
          page: st.page,
          row,
          offset: st.offset + s,
        });
      }
      return r.end;
    } catch (err) {
      if (!(err instanceof CstrError)) throw err;
      const column = this.columns?.[field] ?? `field ${field + 1}`;
      throw new PageFormatError(`column "${column}": malformed C/Java string: ${err.message}`, {
        page: st.page,
        row,
        offset: st.offset + err.index,
      });
    }
  }

  private header(b: Buffer, at: number, st: RecordPageState): void {
    const sc = this.scanner;
    const names: string[] = [];
    for (let k = 0; k < sc.count; k++) {
      const s = sc.start[k]!;
      const e = sc.end[k]!;
      if (sc.quoted[k] === 0) names.push(b.toString('utf8', s, e));
      else names.push(this.scratch.toString('utf8', 0, this.decodeValue(b, s, e, st, undefined, k)));
    }
    if (this.columns === undefined) {
      this.columns = names;
      this.kinds = names.map(() => 0);
      this.inspect = this.plan.ask(names).inspect;
      return;
    }
    if (names.length !== this.columns.length || names.some((n, k) => n !== this.columns![k])) {
      throw new PageFormatError(
        `header ${JSON.stringify(names)} differs from page 1's ${JSON.stringify(this.columns)}`,
        { page: st.page, offset: st.offset + at },
      );
    }
  }
}
