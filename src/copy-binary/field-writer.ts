/**
 * Output side of the page decoders in COPY binary format (warehouse/copy-binary.ts): one field at a time, from the
 * value's text form to the target column's binary form. Each encoder takes the forms report servers write
 * (docs/report-export-service.md "Output page shapes") and refuses anything else, so that the loader falls back to
 * text format: a value never means something else in binary than in text.
 */
import { BINARY, type BinaryEncoding } from './format.ts';
import { makeLocalTimeOffset } from './local-time.ts';

/** Bytes a field can take beyond its text form's length (length word, binary headers): reserve len + this. */
export const FIELD_OVERHEAD = 24;

const TWO_32 = 4_294_967_296;
/** 2000-01-01 (PostgreSQL's epoch) in days since 1970-01-01. */
const PG_EPOCH_DAYS = 10_957;

/**
 * Writes a*mult + b as a big-endian two's-complement int64 at buf[p]; exact while |a * mult| < 2^69, mult <= 1e9 and
 * |b| < mult (every intermediate stays below 2^53).
 */
function writeInt64(buf: Uint8Array, p: number, a: number, mult: number, b: number): void {
  const ah = Math.floor(a / 65_536);
  const x = ah * mult;
  const y = (a - ah * 65_536) * mult + b;
  const xh = Math.floor(x / 65_536);
  const z = (x - xh * 65_536) * 65_536 + y;
  const carry = Math.floor(z / TWO_32);
  const lo = z - carry * TWO_32;
  const hi = (xh + carry) | 0;
  buf[p] = hi >>> 24;
  buf[p + 1] = hi >>> 16;
  buf[p + 2] = hi >>> 8;
  buf[p + 3] = hi;
  buf[p + 4] = lo >>> 24;
  buf[p + 5] = lo >>> 16;
  buf[p + 6] = lo >>> 8;
  buf[p + 7] = lo;
}

function writeInt32(buf: Uint8Array, p: number, v: number): void {
  buf[p] = v >>> 24;
  buf[p + 1] = v >>> 16;
  buf[p + 2] = v >>> 8;
  buf[p + 3] = v;
}

/** Writes an int8 field (length word 8, then `v`) at buf[p] for an integer |v| < 2^53; returns the position after. */
export function writeInt8Field(buf: Uint8Array, p: number, v: number): number {
  writeInt32(buf, p, 8);
  const hi = Math.floor(v / TWO_32);
  writeInt32(buf, p + 4, hi);
  writeInt32(buf, p + 8, v - hi * TWO_32);
  return p + 12;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
function daysFromCivil(y: number, m: number, d: number): number {
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

function daysInMonth(y: number, m: number): number {
  if (m === 2) return y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : 28;
  return m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31;
}

/** Value of the `count` ASCII digits at b[i], or -1 when one is not a digit. */
function digits(b: Uint8Array, i: number, count: number): number {
  let v = 0;
  for (let k = 0; k < count; k++) {
    const d = b[i + k]! - 0x30;
    if (d < 0 || d > 9) return -1;
    v = v * 10 + d;
  }
  return v;
}

const INT64_MAX_DIGITS = '9223372036854775807';

/**
 * Microseconds per unit of a fraction of 1 to 6 digits (10 ** (6 - digits)): a look-up, not a call of Math.pow per
 * value.
 */
const MICROS_PER_DIGITS = [0, 100_000, 10_000, 1000, 100, 10, 1];

/** What a write method returns for a text form its encoder does not take (nothing was written). */
export const REFUSED = -1;

/**
 * Writes the fields of one load's column encodings; one per decoder, not reentrant. Each write method writes at buf[p]
 * (the caller reserved the text form's length + {@link FIELD_OVERHEAD}) and returns the position after the field, or
 * {@link REFUSED} (nothing written) when the encoder does not take the text form.
 */
export class BinaryFieldWriter {
  /** Per column (COPY order), a {@link BINARY} code. */
  readonly encodings: Uint8Array;
  private readonly localOffset: ((localMs: number) => number) | undefined;
  private groups = new Uint16Array(64);

  /**
   * @param encodings per column in COPY order
   * @param timezone IANA zone of timestamps written without offset (the connection's `timezone`, as the load
   *   session's TimeZone); without it such timestamps are refused
   */
  constructor(encodings: readonly BinaryEncoding[], timezone?: string) {
    this.encodings = Uint8Array.from(encodings);
    this.localOffset = timezone === undefined ? undefined : makeLocalTimeOffset(timezone);
  }

  /** Writes the field count that starts every row. */
  rowStart(buf: Uint8Array, p: number): number {
    const n = this.encodings.length;
    buf[p] = n >>> 8;
    buf[p + 1] = n;
    return p + 2;
  }

  /** Writes a NULL field. */
  writeNull(buf: Uint8Array, p: number): number {
    buf[p] = buf[p + 1] = buf[p + 2] = buf[p + 3] = 0xff;
    return p + 4;
  }

  /** Writes column `k`'s value from its text form b[s..e) (already unescaped). */
  write(buf: Uint8Array, p: number, k: number, b: Uint8Array, s: number, e: number): number {
    switch (this.encodings[k]) {
      case BINARY.text:
        return this.text(buf, p, b, s, e);
      case BINARY.int8:
        return this.integer(buf, p, b, s, e, 8);
      case BINARY.int4:
        return this.integer(buf, p, b, s, e, 4);
      case BINARY.int2:
        return this.integer(buf, p, b, s, e, 2);
      case BINARY.numeric:
        return this.numeric(buf, p, b, s, e);
      case BINARY.timestamptz:
        return this.timestamptz(buf, p, b, s, e);
      case BINARY.bool:
        return this.bool(buf, p, b, s, e);
      case BINARY.date:
        return this.date(buf, p, b, s, e);
      default:
        return REFUSED;
    }
  }

  /** The value's bytes with their length. */
  text(buf: Uint8Array, p: number, b: Uint8Array, s: number, e: number): number {
    writeInt32(buf, p, e - s);
    p += 4;
    if (e - s > 32) {
      buf.set(b.subarray(s, e), p);
      return p + e - s;
    }
    for (let i = s; i < e; i++) buf[p++] = b[i]!;
    return p;
  }

  /** `[+-]?digits` within the column's range (int8in's form without blanks). */
  integer(buf: Uint8Array, p: number, b: Uint8Array, s: number, e: number, bytes: 8 | 4 | 2): number {
    let i = s;
    const negative = b[i] === 0x2d;
    if (negative || b[i] === 0x2b) i++;
    while (i < e - 1 && b[i] === 0x30) i++;
    const count = e - i;
    if (count < 1 || count > 19) return REFUSED;
    if (count <= 15) {
      let v = 0;
      for (; i < e; i++) {
        const d = b[i]! - 0x30;
        if (d < 0 || d > 9) return REFUSED;
        v = v * 10 + d;
      }
      if (negative) v = -v;
      if (bytes === 8) {
        writeInt8Field(buf, p, v);
      } else if (bytes === 4) {
        if (v > 2_147_483_647 || v < -2_147_483_648) return REFUSED;
        writeInt32(buf, p, 4);
        writeInt32(buf, p + 4, v);
      } else {
        if (v > 32_767 || v < -32_768) return REFUSED;
        writeInt32(buf, p, 2);
        buf[p + 4] = v >>> 8;
        buf[p + 5] = v;
      }
      return p + 4 + bytes;
    }
    if (bytes !== 8) return REFUSED;
    const high = digits(b, i, count - 9);
    const low = digits(b, e - 9, 9);
    if (high < 0 || low < 0) return REFUSED;
    if (count === 19) {
      // Beyond int64 is PostgreSQL's error to give (in text format).
      for (let k = 0; k < 19; k++) {
        const d = b[i + k]!;
        const m = INT64_MAX_DIGITS.charCodeAt(k) + (negative && k === 18 ? 1 : 0);
        if (d !== m) {
          if (d > m) return REFUSED;
          break;
        }
      }
    }
    writeInt32(buf, p, 8);
    writeInt64(buf, p + 4, negative ? -high : high, 1e9, negative ? -low : low);
    return p + 12;
  }

  /**
   * `[+-]?digits[.digits]` (either side may be empty, not both) as numeric: base-10000 digits, weight, sign, and the
   * display scale of the fraction digits as written (so 1.50 stays 1.50, as numeric_in keeps it).
   */
  numeric(buf: Uint8Array, p: number, b: Uint8Array, s: number, e: number): number {
    let i = s;
    const negative = b[i] === 0x2d;
    if (negative || b[i] === 0x2b) i++;
    const digitsStart = i;
    while (i < e && b[i] === 0x30) i++;
    const intStart = i;
    while (i < e && b[i]! >= 0x30 && b[i]! <= 0x39) i++;
    const intEnd = i;
    let fracStart = i;
    let fracEnd = i;
    if (i < e && b[i] === 0x2e) {
      fracStart = ++i;
      while (i < e && b[i]! >= 0x30 && b[i]! <= 0x39) i++;
      fracEnd = i;
    }
    if (i !== e || (intEnd === digitsStart && fracEnd === fracStart)) return REFUSED;
    const ni = intEnd - intStart;
    const nf = fracEnd - fracStart;
    if (ni > 4000 || nf > 4000) return REFUSED;
    // Base-10000 groups: the integer digits aligned on the decimal point, then the fraction padded on the right.
    const intGroups = (ni + 3) >> 2;
    const total = intGroups + ((nf + 3) >> 2);
    if (this.groups.length < total) this.groups = new Uint16Array(total * 2);
    const g = this.groups;
    let k = 0;
    let j = intStart;
    let first = ni - (intGroups - 1) * 4;
    for (let q = 0; q < intGroups; q++) {
      let v = 0;
      for (const end = j + first; j < end; j++) v = v * 10 + b[j]! - 0x30;
      g[k++] = v;
      first = 4;
    }
    for (j = fracStart; j < fracEnd;) {
      let v = 0;
      let c = 0;
      for (; c < 4 && j < fracEnd; c++, j++) v = v * 10 + b[j]! - 0x30;
      for (; c < 4; c++) v *= 10;
      g[k++] = v;
    }
    let lead = 0;
    let weight = intGroups - 1;
    while (lead < total && g[lead] === 0) {
      lead++;
      weight--;
    }
    let end = total;
    while (end > lead && g[end - 1] === 0) end--;
    const ndigits = end - lead;
    if (ndigits === 0) weight = 0;
    writeInt32(buf, p, 8 + 2 * ndigits);
    buf[p + 4] = ndigits >>> 8;
    buf[p + 5] = ndigits;
    buf[p + 6] = weight >>> 8;
    buf[p + 7] = weight;
    buf[p + 8] = negative && ndigits > 0 ? 0x40 : 0;
    buf[p + 9] = 0;
    buf[p + 10] = nf >>> 8;
    buf[p + 11] = nf;
    p += 12;
    for (let q = lead; q < end; q++) {
      const v = g[q]!;
      buf[p++] = v >>> 8;
      buf[p++] = v;
    }
    return p;
  }

  /**
   * Timestamps: ISO 8601 `yyyy-mm-dd[T ]hh:mm[:ss[.f]]` with `Z`, `±hh`, `±hhmm` or `±hh:mm`, or without offset in the
   * load's time zone; txt's `dd.mm.yyyy hh:mm:ss[.f]` (DateStyle DMY) in the load's time zone. At most 6 fraction
   * digits; years 1 to 9999; hours 0 to 23, seconds 0 to 59.
   */
  timestamptz(buf: Uint8Array, p: number, b: Uint8Array, s: number, e: number): number {
    if (e - s < 16) return REFUSED;
    let y: number, mo: number, d: number;
    if (b[s + 4] === 0x2d && b[s + 7] === 0x2d) {
      y = digits(b, s, 4);
      mo = digits(b, s + 5, 2);
      d = digits(b, s + 8, 2);
      const t = b[s + 10];
      if (t !== 0x54 && t !== 0x20) return REFUSED;
    } else if (b[s + 2] === 0x2e && b[s + 5] === 0x2e && b[s + 10] === 0x20) {
      d = digits(b, s, 2);
      mo = digits(b, s + 3, 2);
      y = digits(b, s + 6, 4);
    } else return REFUSED;
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo)) return REFUSED;
    let i = s + 11;
    if (i + 5 > e || b[i + 2] !== 0x3a) return REFUSED;
    const h = digits(b, i, 2);
    const mi = digits(b, i + 3, 2);
    if (h < 0 || h > 23 || mi < 0 || mi > 59) return REFUSED;
    i += 5;
    let sec = 0;
    let micros = 0;
    if (i < e && b[i] === 0x3a) {
      sec = digits(b, i + 1, 2);
      if (i + 3 > e || sec < 0 || sec > 59) return REFUSED;
      i += 3;
      if (i < e && b[i] === 0x2e) {
        const f = ++i;
        while (i < e && b[i]! >= 0x30 && b[i]! <= 0x39) i++;
        const nf = i - f;
        if (nf < 1 || nf > 6) return REFUSED;
        micros = digits(b, f, nf) * MICROS_PER_DIGITS[nf]!;
      }
    }
    const localSec = (daysFromCivil(y, mo, d) - PG_EPOCH_DAYS) * 86_400 + h * 3600 + mi * 60 + sec;
    let offsetSec: number;
    if (i === e) {
      if (this.localOffset === undefined) return REFUSED;
      offsetSec = this.localOffset((localSec + PG_EPOCH_DAYS * 86_400) * 1000) / 1000;
    } else {
      const c = b[i];
      const rest = e - i;
      if (c === 0x5a && rest === 1) offsetSec = 0;
      else if (c === 0x2b || c === 0x2d) {
        const oh = digits(b, i + 1, 2);
        let om = 0;
        if (rest === 6 && b[i + 3] === 0x3a) om = digits(b, i + 4, 2);
        else if (rest === 5) om = digits(b, i + 3, 2);
        else if (rest !== 3) return REFUSED;
        if (oh < 0 || oh > 15 || om < 0 || om > 59) return REFUSED;
        offsetSec = (c === 0x2d ? -1 : 1) * (oh * 3600 + om * 60);
      } else return REFUSED;
    }
    writeInt32(buf, p, 8);
    writeInt64(buf, p + 4, localSec - offsetSec, 1e6, micros);
    return p + 12;
  }

  /** An ISO 8601 date `yyyy-mm-dd` of a real day, years 1 to 9999 (the form type inference makes a date of). */
  date(buf: Uint8Array, p: number, b: Uint8Array, s: number, e: number): number {
    if (e - s !== 10 || b[s + 4] !== 0x2d || b[s + 7] !== 0x2d) return REFUSED;
    const y = digits(b, s, 4);
    const mo = digits(b, s + 5, 2);
    const d = digits(b, s + 8, 2);
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo)) return REFUSED;
    writeInt32(buf, p, 4);
    writeInt32(buf, p + 4, daysFromCivil(y, mo, d) - PG_EPOCH_DAYS);
    return p + 8;
  }

  /** `t`, `true`, `f`, `false` (what COPY text carries for JSON booleans). */
  bool(buf: Uint8Array, p: number, b: Uint8Array, s: number, e: number): number {
    const len = e - s;
    const c = b[s];
    let v: number;
    if (c === 0x74 && (len === 1 || (len === 4 && b[s + 1] === 0x72 && b[s + 2] === 0x75 && b[s + 3] === 0x65))) v = 1;
    else if (
      c === 0x66 &&
      (len === 1 || (len === 5 && b[s + 1] === 0x61 && b[s + 2] === 0x6c && b[s + 3] === 0x73 && b[s + 4] === 0x65))
    )
      v = 0;
    else return REFUSED;
    writeInt32(buf, p, 1);
    buf[p + 4] = v;
    return p + 5;
  }
}
