/**
 * The JSON value scanner of json/json_compact (docs/report-export-service.md "Output page shapes", json): one value
 * from a buffer to a COPY field, without strings. Text format: numbers digit for digit, strings unescaped from JSON
 * and escaped for COPY in one pass, true/false as the words they are (a text column keeps them as sent, a boolean
 * column reads them, a number column refuses them), null -> \N, objects and arrays as their JSON text; binary
 * format ({@link JsonValueScanner.valueBinary}): each value by its column's encoder. Methods return the index after
 * the value, or {@link NEED} when the buffer ends inside it.
 */
import { BACKSLASH, CR, hexAt, LETTER_N, LF, QUOTE, skipWs, TAB, writeUtf8 } from './bytes.ts';
import { PageFormatError } from './errors.ts';
import { KIND, classifyIsoText, digitsFitInt64 } from './kinds.ts';
import { BINARY, BinaryValueUnsupported } from '../copy-binary/format.ts';
import { REFUSED, writeInt8Field, type BinaryFieldWriter } from '../copy-binary/field-writer.ts';

/** Returned instead of an index when the value continues beyond the buffer. */
export const NEED = -1;

const MAX_DEPTH = 512;
/** Bytes a string holds as they are: 0x20 and above but `"` and `\`. */
const PLAIN = new Uint8Array(256).fill(1, 0x20);
PLAIN[QUOTE] = PLAIN[BACKSLASH] = 0;
/** JSON's true and false as sent, for a binary boolean or text column. */
const WORD_TRUE = Buffer.from('true');
const WORD_FALSE = Buffer.from('false');
/** {@link JsonValueScanner.int8Field}: not a plain short integer, nothing written. */
const NOT_PLAIN = -3;

/**
 * Scans JSON values of one page. Callers set `out`/`op` (the output buffer with room for twice the input,
 * see CopyOutput.reserve), `base` (page offset of b[0]), `page` and `row` (for errors) and `inspect`.
 * After a value, `kind` holds its KIND bit (0 for null, and not computed for strings when !inspect).
 */
export class JsonValueScanner {
  out: Uint8Array = new Uint8Array(0);
  op = 0;
  kind = 0;
  inspect = true;
  page = 0;
  row: number | undefined = undefined;
  base = 0;
  /** Set for COPY binary format: writes each value by its column's encoding. */
  binary: BinaryFieldWriter | undefined = undefined;

  /** Throws a PageFormatError for a syntax problem at b[i]. */
  fail(what: string, i: number): never {
    throw new PageFormatError(`JSON: ${what}`, { page: this.page, row: this.row, offset: this.base + i });
  }

  /** Writes the value starting at b[i] (not whitespace) as a COPY field. */
  value(b: Uint8Array, i: number, n: number): number {
    const c = b[i]!;
    if (c === QUOTE) return this.string(b, i + 1, n);
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return this.number(b, i, n);
    if (c === 0x6e || c === 0x74 || c === 0x66) return this.literal(b, i, n, c);
    if (c === 0x7b || c === 0x5b) {
      const e = this.skip(b, i, n, 0);
      if (e === NEED) return NEED;
      let op = this.op;
      const out = this.out;
      for (let k = i; k < e; k++) {
        const x = b[k]!;
        if (x === BACKSLASH || x === LF || x === CR || x === TAB) {
          out[op++] = BACKSLASH;
          out[op++] = x === LF ? 0x6e : x === CR ? 0x72 : x === TAB ? 0x74 : BACKSLASH;
        } else {
          if (x === 0) this.fail('NUL byte in a value', k);
          out[op++] = x;
        }
      }
      this.op = op;
      this.kind = KIND.json;
      return e;
    }
    this.fail(`unexpected byte 0x${c.toString(16)} where a value should start`, i);
  }

  /**
   * {@link value} in COPY binary format: the value at b[i] as field `col`, by its encoding.
   * The caller reserved 3 bytes per input byte plus FIELD_OVERHEAD.
   * @throws BinaryValueUnsupported when the encoding does not take the value (the loader then loads in text format)
   */
  valueBinary(b: Uint8Array, i: number, n: number, col: number): number {
    const w = this.binary!;
    const code = w.encodings[col];
    const c = b[i]!;
    const out = this.out;
    let e: number;
    let p: number;
    if (c === QUOTE) {
      if (code === BINARY.text) {
        const at = this.op;
        this.op += 4;
        e = this.string(b, i + 1, n, false);
        if (e === NEED) return NEED;
        const len = this.op - at - 4;
        out[at] = len >>> 24;
        out[at + 1] = len >>> 16;
        out[at + 2] = len >>> 8;
        out[at + 3] = len;
        return e;
      }
      // A typed column's string (a timestamp, mostly): its content is the text form, unless it holds an escape.
      let q = i + 1;
      while (q < n && b[q] !== QUOTE && b[q] !== BACKSLASH) q++;
      if (q >= n) return NEED;
      if (b[q] === QUOTE) {
        e = q + 1;
        p = w.write(out, this.op, col, b, i + 1, q);
      } else {
        e = this.stringEnd(b, i + 1, n);
        if (e === NEED) return NEED;
        // Rare (an escape in a number or a timestamp): JSON.parse unescapes; what it refuses (a raw control byte, which
        // the text path passes on) is left to PostgreSQL in text format.
        let text: Buffer | undefined;
        try {
          text = Buffer.from(
            JSON.parse(Buffer.from(b.buffer, b.byteOffset + i, e - i).toString('utf8')) as string,
            'utf8',
          );
        } catch {
          text = undefined;
        }
        p = text === undefined ? REFUSED : w.write(out, this.op, col, text, 0, text.length);
      }
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      if (code === BINARY.int8) {
        // The common case in one pass: an integer of up to 15 digits, read while it is scanned.
        const f = this.int8Field(b, i, n);
        if (f !== NOT_PLAIN) return f;
      }
      e = this.numberEnd(b, i, n);
      if (e === NEED) return NEED;
      p = code === BINARY.text ? w.text(out, this.op, b, i, e) : w.write(out, this.op, col, b, i, e);
    } else if (c === 0x6e || c === 0x74 || c === 0x66) {
      const at = this.op;
      e = this.literal(b, i, n, c);
      if (e === NEED) return NEED;
      // literal() wrote \N, true or false (the text form) at `at`: overwritten with the binary field.
      const word = c === 0x74 ? WORD_TRUE : WORD_FALSE;
      if (c === 0x6e) p = w.writeNull(out, at);
      else if (code === BINARY.text) p = w.text(out, at, word, 0, word.length);
      else p = w.write(out, at, col, word, 0, word.length);
    } else {
      e = this.skip(b, i, n, 0);
      if (e === NEED) return NEED;
      for (let k = i; k < e; k++) if (b[k] === 0) this.fail('NUL byte in a value', k);
      p = code === BINARY.text ? w.text(out, this.op, b, i, e) : REFUSED;
    }
    if (p === REFUSED) throw new BinaryValueUnsupported(col, this.page, this.row ?? 0);
    this.op = p;
    return e;
  }

  /**
   * A JSON integer of 1 to 19 digits at b[i] (`-?(0|[1-9][0-9]*)`, followed by neither `.` nor an exponent) as a
   * binary int8 field; returns the index after it, NEED, or {@link NOT_PLAIN} (nothing written) for any other number,
   * which the general path then checks and writes.
   */
  private int8Field(b: Uint8Array, i: number, n: number): number {
    let k = i;
    const negative = b[k] === 0x2d;
    if (negative) k++;
    const ds = k;
    let v = 0;
    for (; k < n; k++) {
      const d = b[k]! - 0x30;
      if (d < 0 || d > 9) break;
      v = v * 10 + d;
    }
    if (k >= n) return NEED;
    const count = k - ds;
    const t = b[k];
    if (count === 0 || count > 19 || (count > 1 && b[ds] === 0x30) || t === 0x2e || t === 0x65 || t === 0x45)
      return NOT_PLAIN;
    if (count <= 15) this.op = writeInt8Field(this.out, this.op, negative ? -v : v);
    else {
      // 16 to 19 digits (v is not exact): read again by the encoder, beyond int64 left to the general path.
      const p = this.binary!.integer(this.out, this.op, b, i, k, 8);
      if (p === REFUSED) return NOT_PLAIN;
      this.op = p;
    }
    return k;
  }

  /** Index after the literal null, true or false starting with byte c at b[i] (checked), or NEED. */
  private literalEnd(b: Uint8Array, i: number, n: number, c: number): number {
    const word = c === 0x6e ? 'null' : c === 0x74 ? 'true' : 'false';
    for (let k = 1; k < word.length; k++) {
      if (i + k >= n) return NEED;
      if (b[i + k] !== word.charCodeAt(k)) this.fail(`bad literal, expected ${word}`, i);
    }
    return i + word.length;
  }

  /**
   * null / true / false at b[i]: writes \N, or the word as sent (never `t`/`f`: a text column would keep the letter,
   * a value changed on its way in; docs/loaded-tables.md "Values that would change").
   */
  private literal(b: Uint8Array, i: number, n: number, c: number): number {
    const e = this.literalEnd(b, i, n, c);
    if (e === NEED) return NEED;
    if (c === 0x6e) {
      this.out[this.op++] = BACKSLASH;
      this.out[this.op++] = LETTER_N;
      this.kind = 0;
    } else {
      const out = this.out;
      let op = this.op;
      for (let k = i; k < e; k++) out[op++] = b[k]!;
      this.op = op;
      this.kind = KIND.boolean;
    }
    return e;
  }

  /** Index after the number at b[i] (JSON grammar checked), or NEED. Sets `kind`. */
  numberEnd(b: Uint8Array, i: number, n: number): number {
    const negative = b[i] === 0x2d;
    if (negative) i++;
    if (i >= n) return NEED;
    const ds = i;
    let c = b[i]!;
    if (c === 0x30) i++;
    else if (c >= 0x31 && c <= 0x39) {
      i++;
      while (i < n && (c = b[i]!) >= 0x30 && c <= 0x39) i++;
    } else this.fail('bad number', i);
    const de = i;
    if (i >= n) return NEED;
    let numeric = false;
    c = b[i]!;
    if (c === 0x2e) {
      numeric = true;
      const f = ++i;
      while (i < n && (c = b[i]!) >= 0x30 && c <= 0x39) i++;
      if (i >= n) return NEED;
      if (i === f) this.fail('bad number: no digit after the decimal point', i);
      c = b[i]!;
    }
    if (c === 0x65 || c === 0x45) {
      numeric = true;
      if (++i >= n) return NEED;
      c = b[i]!;
      if (c === 0x2b || c === 0x2d) i++;
      const x = i;
      while (i < n && (c = b[i]!) >= 0x30 && c <= 0x39) i++;
      if (i >= n) return NEED;
      if (i === x) this.fail('bad number: no digit in the exponent', i);
    }
    this.kind = numeric || !digitsFitInt64(b, ds, de - ds, negative) ? KIND.numeric : KIND.integer;
    return i;
  }

  /** Copies the number at b[i] verbatim. */
  private number(b: Uint8Array, i: number, n: number): number {
    const e = this.numberEnd(b, i, n);
    if (e === NEED) return NEED;
    const out = this.out;
    let op = this.op;
    for (let k = i; k < e; k++) out[op++] = b[k]!;
    this.op = op;
    return e;
  }

  /**
   * Writes the string whose content starts at b[i] (after the opening quote), JSON escapes decoded and
   * COPY escapes applied; returns the index after the closing quote. Raw tab/LF/CR (invalid in strict JSON)
   * are accepted and escaped, other raw control bytes pass through; NUL (raw or \u0000) is an error.
   * @param copyEscape false: JSON escapes decoded only, the value's bytes as they are (binary format)
   */
  string(b: Uint8Array, i: number, n: number, copyEscape = true): number {
    const out = this.out;
    let op = this.op;
    const s = i;
    let plain = true;
    for (;;) {
      let c = 0;
      while (i < n && PLAIN[(c = b[i]!)] === 1) {
        out[op++] = c;
        i++;
      }
      if (i >= n) return NEED;
      if (c === QUOTE) break;
      plain = false;
      if (c === BACKSLASH) {
        if (i + 1 >= n) return NEED;
        const e = b[i + 1]!;
        if (e === 0x75) {
          if (i + 6 > n) return NEED;
          let cp = hexAt(b, i + 2, 4);
          if (cp < 0) this.fail('bad \\u escape', i);
          let len = 6;
          if (cp >= 0xd800 && cp <= 0xdbff) {
            if (i + 12 > n) return NEED;
            const lo = b[i + 6] === BACKSLASH && b[i + 7] === 0x75 ? hexAt(b, i + 8, 4) : -1;
            if (lo < 0xdc00 || lo > 0xdfff) this.fail('lone UTF-16 surrogate in \\u escape', i);
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            len = 12;
          } else if (cp >= 0xdc00 && cp <= 0xdfff) {
            this.fail('lone UTF-16 surrogate in \\u escape', i);
          }
          if (cp === 0) this.fail('\\u0000 in a string: PostgreSQL text cannot hold NUL', i);
          if (cp < 0x80) {
            if (copyEscape && (cp === BACKSLASH || cp === LF || cp === CR || cp === TAB)) {
              out[op++] = BACKSLASH;
              out[op++] = cp === LF ? 0x6e : cp === CR ? 0x72 : cp === TAB ? 0x74 : BACKSLASH;
            } else out[op++] = cp;
          } else op = writeUtf8(cp, out, op);
          i += len;
          continue;
        }
        if (e === QUOTE || e === 0x2f) out[op++] = e;
        else if (e === BACKSLASH || e === 0x6e || e === 0x72 || e === 0x74 || e === 0x62 || e === 0x66) {
          // \\ \n \r \t \b \f mean the same in COPY text format.
          if (copyEscape) {
            out[op++] = BACKSLASH;
            out[op++] = e;
          } else
            out[op++] =
              e === 0x6e ? LF : e === 0x72 ? CR : e === 0x74 ? TAB : e === 0x62 ? 0x08 : e === 0x66 ? 0x0c : BACKSLASH;
        } else this.fail(`bad escape \\${String.fromCharCode(e)}`, i);
        i += 2;
        continue;
      }
      if (c === 0) this.fail('NUL byte in a string', i);
      if (copyEscape && (c === LF || c === CR || c === TAB)) {
        out[op++] = BACKSLASH;
        out[op++] = c === LF ? 0x6e : c === CR ? 0x72 : c === TAB ? 0x74 : BACKSLASH;
      } else out[op++] = c;
      i++;
    }
    this.op = op;
    if (this.inspect) this.kind = plain ? classifyIsoText(b, s, i) : KIND.text;
    return i + 1;
  }

  /** Index after the string whose content starts at b[i], escapes checked, nothing written; or NEED. */
  stringEnd(b: Uint8Array, i: number, n: number): number {
    for (;;) {
      if (i >= n) return NEED;
      const c = b[i]!;
      if (c === QUOTE) return i + 1;
      if (c !== BACKSLASH) {
        i++;
        continue;
      }
      if (i + 1 >= n) return NEED;
      const e = b[i + 1]!;
      if (e === 0x75) {
        if (i + 6 > n) return NEED;
        if (hexAt(b, i + 2, 4) < 0) this.fail('bad \\u escape', i);
        i += 6;
      } else if (
        e === QUOTE ||
        e === BACKSLASH ||
        e === 0x2f ||
        e === 0x62 ||
        e === 0x66 ||
        e === 0x6e ||
        e === 0x72 ||
        e === 0x74
      ) {
        i += 2;
      } else this.fail(`bad escape \\${String.fromCharCode(e)}`, i);
    }
  }

  /** Index after the value at b[i] (any JSON value, grammar checked, depth limited), nothing written; or NEED. */
  skip(b: Uint8Array, i: number, n: number, depth: number): number {
    if (depth > MAX_DEPTH) this.fail('nesting too deep', i);
    const c = b[i]!;
    if (c === QUOTE) return this.stringEnd(b, i + 1, n);
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return this.numberEnd(b, i, n);
    if (c === 0x6e || c === 0x74 || c === 0x66) return this.literalEnd(b, i, n, c);
    const isObject = c === 0x7b;
    if (!isObject && c !== 0x5b) this.fail(`unexpected byte 0x${c.toString(16)} where a value should start`, i);
    const close = isObject ? 0x7d : 0x5d;
    i = skipWs(b, i + 1, n);
    if (i >= n) return NEED;
    if (b[i] === close) return i + 1;
    for (;;) {
      if (isObject) {
        if (b[i] !== QUOTE) this.fail('expected a member name', i);
        i = this.stringEnd(b, i + 1, n);
        if (i === NEED) return NEED;
        i = skipWs(b, i, n);
        if (i >= n) return NEED;
        if (b[i] !== 0x3a) this.fail("expected ':'", i);
        i = skipWs(b, i + 1, n);
        if (i >= n) return NEED;
      }
      i = this.skip(b, i, n, depth + 1);
      if (i === NEED) return NEED;
      i = skipWs(b, i, n);
      if (i >= n) return NEED;
      const d = b[i]!;
      if (d === close) return i + 1;
      if (d !== 0x2c) this.fail(`expected ',' or '${String.fromCharCode(close)}'`, i);
      i = skipWs(b, i + 1, n);
      if (i >= n) return NEED;
    }
  }
}
