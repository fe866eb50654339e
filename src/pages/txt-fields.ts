/**
 * Splits the records of the text output types into fields (docs/report-export-service.md "Output page shapes", txt;
 * "Output types"): fields separated by commas, a record ended by LF or CR LF, text in double quotes, quoted `csv`
 * (txt, txt_all: an inner quote doubled, a line break inside quotes is data) or `cstr` (txt_cstr, txt_allcstr: inside
 * the quotes a backslash escapes the next byte, see cstr.ts).
 */
import { BACKSLASH, BARE_END, COMMA, CR, LF, QUOTE } from './bytes.ts';
import { PageFormatError } from './errors.ts';

export type Quoting = 'csv' | 'cstr';

/** Returned by {@link RecordScanner.scan} when the record does not end inside the buffer. */
export const NEED_MORE = -1;

/**
 * Scans one record at a time. After a {@link scan}, field k is `start[k]..end[k]` (without its quotes), `quoted[k]`
 * and `escaped[k]` (a doubled quote in `csv`, a backslash in `cstr`) say how it was written; `contentEnd` is where the
 * line end starts. Errors name `page`, `row` and the page offset of the scanned buffer (`offset`), set by the caller.
 */
export class RecordScanner {
  count = 0;
  start = new Int32Array(64);
  end = new Int32Array(64);
  quoted = new Uint8Array(64);
  escaped = new Uint8Array(64);
  contentEnd = 0;
  page = 0;
  row: number | undefined = undefined;
  offset = 0;
  private readonly cstr: boolean;

  constructor(quoting: Quoting) {
    this.cstr = quoting === 'cstr';
  }

  private push(s: number, e: number, q: number, esc: number): void {
    const k = this.count++;
    if (k >= this.start.length) {
      const grow = <T extends Int32Array | Uint8Array>(a: T): T => {
        const next = new (a.constructor as new (n: number) => T)(a.length * 2);
        next.set(a);
        return next;
      };
      this.start = grow(this.start);
      this.end = grow(this.end);
      this.quoted = grow(this.quoted);
      this.escaped = grow(this.escaped);
    }
    this.start[k] = s;
    this.end[k] = e;
    this.quoted[k] = q;
    this.escaped[k] = esc;
  }

  private fail(what: string, i: number): never {
    throw new PageFormatError(what, { page: this.page, row: this.row, offset: this.offset + i });
  }

  /**
   * Scans the record starting at b[i]: the index after its line end, or {@link NEED_MORE}.
   * @throws PageFormatError for a quote inside a bare field, a byte after a closing quote, a CR without LF
   */
  scan(b: Uint8Array, i: number, n: number): number {
    this.count = 0;
    const cstr = this.cstr;
    for (;;) {
      if (i >= n) return NEED_MORE;
      let c = b[i]!;
      if (c === QUOTE) {
        const s = i + 1;
        let j = s;
        let esc = 0;
        for (;;) {
          if (j >= n) return NEED_MORE;
          const x = b[j]!;
          if (cstr && x === BACKSLASH) {
            esc = 1;
            j += 2;
            continue;
          }
          if (x !== QUOTE) {
            j++;
            continue;
          }
          if (!cstr) {
            if (j + 1 >= n) return NEED_MORE;
            if (b[j + 1] === QUOTE) {
              esc = 1;
              j += 2;
              continue;
            }
          }
          break;
        }
        this.push(s, j, 1, esc);
        i = j + 1;
        if (i >= n) return NEED_MORE;
        c = b[i]!;
      } else {
        const s = i;
        while (BARE_END[c] === 0) {
          if (++i >= n) return NEED_MORE;
          c = b[i]!;
        }
        if (c === QUOTE) this.fail(`field ${this.count + 1}: quote inside an unquoted field`, i);
        this.push(s, i, 0, 0);
      }
      if (c === COMMA) {
        i++;
        continue;
      }
      this.contentEnd = i;
      if (c === LF) return i + 1;
      if (c === CR) {
        if (i + 1 >= n) return NEED_MORE;
        if (b[i + 1] !== LF) this.fail('carriage return without line feed outside quotes', i);
        return i + 2;
      }
      this.fail(`field ${this.count}: unexpected byte 0x${c.toString(16)} after a closing quote`, i);
    }
  }
}
