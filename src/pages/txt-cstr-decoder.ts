/**
 * txt_cstr pages -> COPY text rows (docs/report-export-service.md "Output types": "Text coded as C/Java string, detail
 * component elements only"): the txt shape with every quoted value coded as a C/Java string literal, decoded here
 * (cstr.ts) so that a value loads exactly as the server's text was before coding.
 */
import { writeEscapedBytes } from './copy-text.ts';
import { BACKSLASH, CR, LF, TAB } from './bytes.ts';
import { classifyBare, classifyIsoText, KIND } from './kinds.ts';
import { TextRecordsDecoder, type RecordPageState } from './text-records.ts';
import type { DecoderLimits } from './value-limit.ts';
import type { RowsPlan } from './rows-plan.ts';

/** Whether b[s..e) holds no byte that needs decoding or COPY escaping. */
function plain(b: Uint8Array, s: number, e: number): boolean {
  for (let k = s; k < e; k++) {
    const c = b[k]!;
    if (c === BACKSLASH || c === LF || c === CR || c === TAB || c === 0) return false;
  }
  return true;
}

/** The txt_cstr decoder; see the file comment. */
export class TxtCstrPageDecoder extends TextRecordsDecoder {
  readonly outputType = 'txt_cstr' as const;
  columns: string[] | undefined = undefined;

  constructor(limits: DecoderLimits) {
    super('cstr', limits, true);
  }

  protected override learnColumns(names: string[]): RowsPlan {
    this.columns = names;
    return super.learnColumns(names);
  }

  protected record(b: Buffer, at: number, st: RecordPageState): boolean {
    const sc = this.scanner;
    const ncols = this.columns!.length;
    const row = st.line;
    if (!this.hasHeaderFields(at, st)) return false;
    const out = this.out;
    const inspect = this.inspect;
    const kinds = this.kinds;
    const fit = this.fit;
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
        if (fit !== undefined && fit.onNumber[k] !== 0) fit.check(k, b, s, e, false, st.page, row);
        out.pos = writeEscapedBytes(b, s, e, out.buf, out.pos);
        continue;
      }
      if (plain(b, s, e)) {
        if (inspect) kinds[k]! |= classifyIsoText(b, s, e);
        if (fit !== undefined && fit.onText[k] !== 0) fit.check(k, b, s, e, true, st.page, row);
        b.copy(out.buf, out.pos, s, e);
        out.pos += e - s;
        continue;
      }
      if (inspect) kinds[k]! |= KIND.text;
      const len = this.decodeQuoted(b, s, e, st, row, k);
      if (fit !== undefined && fit.onText[k] !== 0) fit.check(k, this.scratch, 0, len, true, st.page, row);
      out.pos = writeEscapedBytes(this.scratch, 0, len, out.buf, out.pos);
    }
    out.buf[out.pos++] = LF;
    this.rows++;
    return true;
  }
}
