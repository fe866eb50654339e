/**
 * Splits the records of the text output types into fields (docs/report-export-service.md "Output page shapes", txt; "Output types": txt_all,
 * txt_cstr, txt_allcstr): fields separated by commas, a record ended by LF or CR LF, text in double quotes. Two
 * quotings: `csv` (txt, txt_all: an inner quote is doubled, a line break inside quotes is data) and `cstr`
 * (txt_cstr, txt_allcstr: inside the quotes a backslash escapes the next byte, see cstr.ts).
 */
import { CR, LF } from './bytes.ts';
import { PageFormatError } from './errors.ts';

const QUOTE = 0x22;
const COMMA = 0x2c;
const BACKSLASH = 0x5c;

/** How text values are quoted; see the file comment. */
export type Quoting = 'csv' | 'cstr';

/** Returned by {@link RecordScanner.scan} when the record does not end inside the buffer. */
export const NEED_MORE = -1;

/** A problem with the shape of a record, at index `index` of the scanned buffer. */
export class RecordShapeError extends Error {
  readonly index: number;
  constructor(message: string, index: number) {
    super(message);
    this.index = index;
  }
}

/**
 * Scans one record at a time. After a successful {@link scan}, fields 0..count-1 are `start[k]..end[k]` (the
 * content, without the quotes for a quoted field), `quoted[k]` says whether the field was quoted, `escaped[k]` whether
 * its content holds an escape (a doubled quote in `csv`, a backslash in `cstr`); `contentEnd` is where the record's
 * line end starts.
 */
export class RecordScanner {
  count = 0;
  start = new Int32Array(64);
  end = new Int32Array(64);
  quoted = new Uint8Array(64);
  escaped = new Uint8Array(64);
  contentEnd = 0;
  private readonly quoting: Quoting;

  constructor(quoting: Quoting) {
    this.quoting = quoting;
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

  /**
   * Scans the record starting at b[i].
   * @returns the index after its line end, or {@link NEED_MORE} when the buffer ends first
   * @throws RecordShapeError for a quote inside a bare field, a byte after a closing quote, a CR without LF
   */
  scan(b: Uint8Array, i: number, n: number): number {
    this.count = 0;
    const cstr = this.quoting === 'cstr';
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
        while (c !== COMMA && c !== LF && c !== CR) {
          if (c === QUOTE) throw new RecordShapeError(`field ${this.count + 1}: quote inside an unquoted field`, i);
          if (++i >= n) return NEED_MORE;
          c = b[i]!;
        }
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
        if (b[i + 1] !== LF) throw new RecordShapeError('carriage return without line feed outside quotes', i);
        return i + 2;
      }
      throw new RecordShapeError(`field ${this.count}: unexpected byte 0x${c.toString(16)} after a closing quote`, i);
    }
  }
}

/**
 * One {@link RecordScanner.scan} of the record at b[i], its shape errors as the page's PageFormatError. Called per
 * record on the page -> COPY path: the error's context comes as numbers, not as an object made for every record.
 * @param page the page, for the error
 * @param row the record's 1-based row, for the error
 * @param offset the page offset of b[0], for the error
 * @returns the index after the record's line end, or {@link NEED_MORE}
 * @throws PageFormatError naming page, row and offset
 */
export function scanRecord(
  sc: RecordScanner,
  b: Uint8Array,
  i: number,
  n: number,
  page: number,
  row: number | undefined,
  offset: number,
): number {
  try {
    return sc.scan(b, i, n);
  } catch (err) {
    if (!(err instanceof RecordShapeError)) throw err;
    throw new PageFormatError(err.message, { page, row, offset: offset + err.index });
  }
}
