/**
 * The kinds of values seen in a column (the warehouse's type inference), told from the bytes without a string
 * (docs/report-export-service.md "Output page shapes": bare or JSON numbers, txt's dd.mm.yyyy hh:mm:ss.mmm, ISO 8601).
 */
import { KIND } from '../warehouse/row-source.ts';

export { KIND, type KindBit } from '../warehouse/row-source.ts';

const INT64_MAX = [57, 50, 50, 51, 51, 55, 50, 48, 51, 54, 56, 53, 52, 55, 55, 53, 56, 48, 55]; // "9223372036854775807"

/** Whether the `count` ASCII digits at b[start..] (no leading zeros) fit int64; `negative` allows ...808. */
export function digitsFitInt64(b: Uint8Array, start: number, count: number, negative: boolean): boolean {
  if (count < 19) return true;
  if (count > 19) return false;
  for (let k = 0; k < 19; k++) {
    const d = b[start + k]!;
    const m = INT64_MAX[k]! + (negative && k === 18 ? 1 : 0);
    if (d !== m) return d < m;
  }
  return true;
}

/**
 * Classifies a bare number at b[s..e): `-?digits(.digits)?([eE][+-]?digits)?` (also `.5`, `+1`) as
 * KIND.integer or KIND.numeric; returns 0 when the bytes are not a number.
 */
export function classifyNumber(b: Uint8Array, s: number, e: number): number {
  let i = s;
  let negative = false;
  if (i < e && (b[i] === 0x2d || b[i] === 0x2b)) {
    negative = b[i] === 0x2d;
    i++;
  }
  while (i < e - 1 && b[i] === 0x30 && b[i + 1]! >= 0x30 && b[i + 1]! <= 0x39) i++; // leading zeros
  const intStart = i;
  while (i < e && b[i]! >= 0x30 && b[i]! <= 0x39) i++;
  const intDigits = i - intStart;
  if (i === e) {
    if (intDigits === 0) return 0;
    return digitsFitInt64(b, intStart, intDigits, negative) ? KIND.integer : KIND.numeric;
  }
  let fracDigits = 0;
  if (b[i] === 0x2e) {
    i++;
    const f = i;
    while (i < e && b[i]! >= 0x30 && b[i]! <= 0x39) i++;
    fracDigits = i - f;
  }
  if (intDigits + fracDigits === 0) return 0;
  if (i < e && (b[i] === 0x65 || b[i] === 0x45)) {
    i++;
    if (i < e && (b[i] === 0x2b || b[i] === 0x2d)) i++;
    const x = i;
    while (i < e && b[i]! >= 0x30 && b[i]! <= 0x39) i++;
    if (i === x) return 0;
  }
  return i === e ? KIND.numeric : 0;
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39;
}

function digitsAt(b: Uint8Array, i: number, count: number): boolean {
  for (let k = 0; k < count; k++) if (!isDigit(b[i + k])) return false;
  return true;
}

/** Whether b[s..e) is a txt timestamp `dd.mm.yyyy hh:mm:ss`, optionally with `.` and 1 to 9 digits. */
export function isTxtTimestamp(b: Uint8Array, s: number, e: number): boolean {
  const len = e - s;
  if (
    len < 19 ||
    len > 29 ||
    b[s + 2] !== 0x2e ||
    b[s + 5] !== 0x2e ||
    b[s + 10] !== 0x20 ||
    b[s + 13] !== 0x3a ||
    b[s + 16] !== 0x3a
  )
    return false;
  if (
    !digitsAt(b, s, 2) ||
    !digitsAt(b, s + 3, 2) ||
    !digitsAt(b, s + 6, 4) ||
    !digitsAt(b, s + 11, 2) ||
    !digitsAt(b, s + 14, 2) ||
    !digitsAt(b, s + 17, 2)
  ) {
    return false;
  }
  if (len === 19) return true;
  return len >= 21 && b[s + 19] === 0x2e && digitsAt(b, s + 20, len - 20);
}

/** Kind of a bare (unquoted, non-empty) txt field: integer, numeric, timestamp, date (ISO), else text. */
export function classifyBare(b: Uint8Array, s: number, e: number): number {
  const c = b[s]!;
  if (e - s >= 19 && b[s + 2] === 0x2e && isTxtTimestamp(b, s, e)) return KIND.timestamp;
  if (b[s + 4] === 0x2d) {
    // A date or timestamp; `1.5e-7` has its minus there too.
    const k = classifyIsoText(b, s, e);
    if (k !== KIND.text) return k;
  }
  if ((c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e) {
    const k = classifyNumber(b, s, e);
    if (k !== 0) return k;
  }
  return KIND.text;
}

/**
 * Whether b[s..e) is an ISO 8601 timestamp with a UTC offset: `yyyy-mm-ddThh:mm[:ss[.f+]]` (`T` or a space) followed
 * by `Z`, `±hh:mm`, `±hhmm` or `±hh`.
 */
export function isIsoTimestampWithOffset(b: Uint8Array, s: number, e: number): boolean {
  const len = e - s;
  if (len < 17 || len > 40 || b[s + 4] !== 0x2d || b[s + 7] !== 0x2d || b[s + 13] !== 0x3a) return false;
  const t = b[s + 10];
  if (t !== 0x54 && t !== 0x20 && t !== 0x74) return false;
  if (
    !digitsAt(b, s, 4) ||
    !digitsAt(b, s + 5, 2) ||
    !digitsAt(b, s + 8, 2) ||
    !digitsAt(b, s + 11, 2) ||
    !digitsAt(b, s + 14, 2)
  )
    return false;
  let i = s + 16;
  if (b[i] === 0x3a) {
    if (!digitsAt(b, i + 1, 2)) return false;
    i += 3;
    if (b[i] === 0x2e || b[i] === 0x2c) {
      i++;
      const f = i;
      while (i < e && isDigit(b[i])) i++;
      if (i === f) return false;
    }
  }
  const rest = e - i;
  const c = b[i];
  if (rest === 1) return c === 0x5a || c === 0x7a;
  if (c !== 0x2b && c !== 0x2d) return false;
  if (rest === 3) return digitsAt(b, i + 1, 2);
  if (rest === 5) return digitsAt(b, i + 1, 4);
  return rest === 6 && digitsAt(b, i + 1, 2) && b[i + 3] === 0x3a && digitsAt(b, i + 4, 2);
}

/**
 * Whether b[s..e) is a number as a server writes one: `-?(0|[1-9][0-9]*)(.[0-9]+)?`. XML carries every value as
 * text, so a code like "0100" or "+41" must stay text: a numeric type would lose its leading zero or sign.
 */
function isCanonicalNumber(b: Uint8Array, s: number, e: number): boolean {
  let i = s;
  if (b[i] === 0x2d) i++;
  if (i >= e || b[i] === 0x2e) return false;
  if (b[i] === 0x30 && i + 1 < e && b[i + 1] !== 0x2e) return false;
  return true;
}

/**
 * Kind of a non-empty xml_query value already written as COPY text bytes at b[s..e): integer, numeric (both
 * only in canonical form, see isCanonicalNumber), ISO date or timestamp (classifyIsoText), else text.
 */
export function classifyXmlValue(b: Uint8Array, s: number, e: number): number {
  // The common number in one pass: -?(0|[1-9][0-9]*)(.[0-9]+)? (anything else as below).
  let i = s;
  if (b[i] === 0x2d) i++;
  const ds = i;
  while (i < e && b[i]! >= 0x30 && b[i]! <= 0x39) i++;
  const count = i - ds;
  if (count > 0 && (count === 1 || b[ds] !== 0x30)) {
    if (i === e) return digitsFitInt64(b, ds, count, ds > s) ? KIND.integer : KIND.numeric;
    if (b[i] === 0x2e && i + 1 < e) {
      let f = i + 1;
      while (f < e && b[f]! >= 0x30 && b[f]! <= 0x39) f++;
      if (f === e) return KIND.numeric;
    }
  }
  const c = b[s]!;
  if ((c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e) {
    const k = isCanonicalNumber(b, s, e) ? classifyNumber(b, s, e) : 0;
    if (k !== 0) return k;
    return classifyIsoText(b, s, e);
  }
  return KIND.text;
}

function daysInMonth(y: number, m: number): number {
  if (m === 2) return y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : 28;
  return m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31;
}

function twoDigits(b: Uint8Array, i: number): number {
  return (b[i]! - 0x30) * 10 + b[i + 1]! - 0x30;
}

/** Whether b[s..s+10) is an ISO 8601 date `yyyy-mm-dd` of a real day, years 0001 to 9999. */
function isIsoDateAt(b: Uint8Array, s: number): boolean {
  if (b[s + 4] !== 0x2d || b[s + 7] !== 0x2d || !digitsAt(b, s, 4) || !digitsAt(b, s + 5, 2) || !digitsAt(b, s + 8, 2))
    return false;
  const y = twoDigits(b, s) * 100 + twoDigits(b, s + 2);
  const m = twoDigits(b, s + 5);
  const d = twoDigits(b, s + 8);
  return y >= 1 && m >= 1 && m <= 12 && d >= 1 && d <= daysInMonth(y, m);
}

/**
 * Whether b[s..e) (its date checked by the caller) is an ISO 8601 timestamp without offset,
 * `yyyy-mm-dd[T ]hh:mm[:ss[.f]]`: hours 0 to 23, minutes and seconds 0 to 59, 1 to 6 fraction digits.
 */
function isIsoLocalTimestamp(b: Uint8Array, s: number, e: number): boolean {
  const len = e - s;
  const t = b[s + 10];
  if ((t !== 0x54 && t !== 0x20 && t !== 0x74) || (len !== 16 && len < 19) || b[s + 13] !== 0x3a) return false;
  if (!digitsAt(b, s + 11, 2) || !digitsAt(b, s + 14, 2) || twoDigits(b, s + 11) > 23 || twoDigits(b, s + 14) > 59)
    return false;
  if (len === 16) return true;
  if (b[s + 16] !== 0x3a || !digitsAt(b, s + 17, 2) || twoDigits(b, s + 17) > 59) return false;
  if (len === 19) return true;
  return b[s + 19] === 0x2e && len >= 21 && len <= 26 && digitsAt(b, s + 20, len - 20);
}

/**
 * Kind of a text value (a JSON string, an xml_query value, a txt field) by its bytes (docs/loaded-tables.md "Types"):
 * an ISO 8601 date → date; an ISO 8601 timestamp with or without offset → timestamp; anything else → text.
 */
export function classifyIsoText(b: Uint8Array, s: number, e: number): number {
  const len = e - s;
  if (len < 10 || len > 40 || b[s + 4] !== 0x2d || b[s + 7] !== 0x2d || !isIsoDateAt(b, s)) return KIND.text;
  if (len === 10) return KIND.date;
  return isIsoTimestampWithOffset(b, s, e) || isIsoLocalTimestamp(b, s, e) ? KIND.timestamp : KIND.text;
}
