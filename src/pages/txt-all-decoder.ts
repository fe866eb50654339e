/**
 * txt_all and txt_allcstr pages -> COPY text rows `page, line, fields` (docs/report-export-service.md "Output types":
 * "all report component elements"), one row per line, lossless: `line` is 1-based within the page, `fields text[]`
 * holds the fields unquoted (txt_allcstr's C/Java escapes decoded). An empty bare field is a NULL element, `""` an
 * empty string, an empty line `{}`.
 */
import { BACKSLASH, CR, LF, QUOTE, TAB } from './bytes.ts';
import { TextRecordsDecoder, type RecordPageState } from './text-records.ts';
import type { DecoderLimits } from './value-limit.ts';
import { LINE_COLUMNS } from './fixed-columns.ts';

const NULL_ELEMENT = Buffer.from('NULL');

/**
 * Writes src[s..e) as the inside of a quoted array element, COPY-text-escaped: `"` -> `\\"`, `\` -> `\\\\`,
 * LF/CR/TAB -> `\n` `\r` `\t`. With `undouble`, `""` is one quote (csv quoting). Caller reserved 4 * (e - s).
 */
function writeElement(src: Uint8Array, s: number, e: number, out: Uint8Array, op: number, undouble: boolean): number {
  for (let k = s; k < e; k++) {
    const c = src[k]!;
    if (c === QUOTE) {
      if (undouble && src[k + 1] === QUOTE) k++;
      out[op++] = BACKSLASH;
      out[op++] = BACKSLASH;
      out[op++] = QUOTE;
    } else if (c === BACKSLASH) {
      out[op++] = BACKSLASH;
      out[op++] = BACKSLASH;
      out[op++] = BACKSLASH;
      out[op++] = BACKSLASH;
    } else if (c === LF || c === CR || c === TAB) {
      out[op++] = BACKSLASH;
      out[op++] = c === LF ? 0x6e : c === CR ? 0x72 : 0x74;
    } else {
      out[op++] = c;
    }
  }
  return op;
}

/** The txt_all / txt_allcstr decoder; see the file comment. */
export class TxtAllPageDecoder extends TextRecordsDecoder {
  readonly outputType: 'txt_all' | 'txt_allcstr';
  readonly columns = LINE_COLUMNS.map((c) => c.name);
  readonly fixedColumns = LINE_COLUMNS;
  private prefix = Buffer.alloc(0);

  constructor(outputType: 'txt_all' | 'txt_allcstr', limits: DecoderLimits) {
    super(outputType === 'txt_allcstr' ? 'cstr' : 'csv', limits, false);
    this.outputType = outputType;
    this.kinds = [0, 0, 0];
  }

  protected override label(k: number, line: number | undefined): string {
    return `line ${line}, field ${k + 1}`;
  }

  protected record(b: Buffer, at: number, st: RecordPageState): boolean {
    const sc = this.scanner;
    const out = this.out;
    const line = st.line + 1;
    if (st.line === 0) this.prefix = Buffer.from(`${st.page}\t`);
    const lineText = `${line}\t`;
    out.reserve(this.prefix.length + lineText.length + 4 * (sc.contentEnd - at) + 8 * sc.count + 4);
    out.pos += this.prefix.copy(out.buf, out.pos);
    out.pos += out.buf.write(lineText, out.pos, 'latin1');
    out.buf[out.pos++] = 0x7b;
    const emptyLine = sc.count === 1 && sc.quoted[0] === 0 && sc.start[0] === sc.end[0];
    for (let k = 0; k < sc.count && !emptyLine; k++) {
      if (k > 0) out.buf[out.pos++] = 0x2c;
      const s = sc.start[k]!;
      const e = sc.end[k]!;
      if (sc.quoted[k] === 0 && s === e) {
        out.pos += NULL_ELEMENT.copy(out.buf, out.pos);
        continue;
      }
      out.buf[out.pos++] = QUOTE;
      if (sc.quoted[k] === 1 && this.quoting === 'cstr') {
        const len = this.decodeQuoted(b, s, e, st, line, k);
        out.reserve(4 * len + 8 * (sc.count - k) + 4);
        out.pos = writeElement(this.scratch, 0, len, out.buf, out.pos, false);
      } else {
        out.pos = writeElement(b, s, e, out.buf, out.pos, sc.quoted[k] === 1);
      }
      out.buf[out.pos++] = QUOTE;
    }
    out.buf[out.pos++] = 0x7d;
    out.buf[out.pos++] = LF;
    this.rows++;
    return true;
  }
}
