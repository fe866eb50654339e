/**
 * The byte-level helpers every page parser shares: the bytes they look for, whitespace, hex digits, comparing a span
 * with known bytes, and the one UTF-8 encoder.
 */

export const TAB = 0x09;
export const LF = 0x0a;
export const CR = 0x0d;
export const QUOTE = 0x22;
export const COMMA = 0x2c;
export const BACKSLASH = 0x5c;
export const LETTER_N = 0x4e;

/** 1 for the bytes that end a bare (unquoted) txt field: comma, LF, CR, and a quote, which it may not hold. */
export const BARE_END = new Uint8Array(256);
BARE_END[COMMA] = BARE_END[LF] = BARE_END[CR] = BARE_END[QUOTE] = 1;

/** Whether `c` is JSON and XML whitespace (space, LF, CR, tab). */
export function isWs(c: number): boolean {
  return c === 0x20 || c === LF || c === CR || c === TAB;
}

/** Index of the first non-whitespace byte at or after i (n if none). */
export function skipWs(b: Uint8Array, i: number, n: number): number {
  for (; i < n; i++) {
    const c = b[i]!;
    if (c !== 0x20 && c !== LF && c !== CR && c !== TAB) return i;
  }
  return n;
}

/**
 * Whether b[i..] begins with `bytes`; false when b ends first. A plain loop: the spans compared are a tag or a key,
 * too short for a native call to pay.
 */
export function startsWith(b: Uint8Array, i: number, bytes: Uint8Array): boolean {
  const len = bytes.length;
  if (i + len > b.length) return false;
  for (let k = 0; k < len; k++) if (b[i + k] !== bytes[k]) return false;
  return true;
}

/** The value of hex digit `c`, or -1. */
export function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const l = c | 0x20;
  return l >= 0x61 && l <= 0x66 ? l - 0x57 : -1;
}

/** The `count` hex digits at b[i..] as a number, or -1 (also when they pass `e`). */
export function hexAt(b: Uint8Array, i: number, count: number, e = b.length): number {
  if (i + count > e) return -1;
  let v = 0;
  for (let k = 0; k < count; k++) {
    const d = hexDigit(b[i + k]!);
    if (d < 0) return -1;
    v = (v << 4) | d;
  }
  return v;
}

/** Writes code point `cp` (no surrogate) as UTF-8 at out[op]; returns the new position. The caller reserved 4 bytes. */
export function writeUtf8(cp: number, out: Uint8Array, op: number): number {
  if (cp < 0x80) out[op++] = cp;
  else if (cp < 0x800) {
    out[op++] = 0xc0 | (cp >> 6);
    out[op++] = 0x80 | (cp & 0x3f);
  } else if (cp < 0x10000) {
    out[op++] = 0xe0 | (cp >> 12);
    out[op++] = 0x80 | ((cp >> 6) & 0x3f);
    out[op++] = 0x80 | (cp & 0x3f);
  } else {
    out[op++] = 0xf0 | (cp >> 18);
    out[op++] = 0x80 | ((cp >> 12) & 0x3f);
    out[op++] = 0x80 | ((cp >> 6) & 0x3f);
    out[op++] = 0x80 | (cp & 0x3f);
  }
  return op;
}

/**
 * Length of the byte order mark at the start of `buf` (docs/report-export-service.md "Output page shapes": text pages
 * begin with one of 1 to 4 bytes), 0 if none: 00 00 FE FF, FF FE 00 00, EF BB BF, FE FF, FF FE, longest first. Ask
 * with {@link BOM_MAX_BYTES} bytes of a page (or all of a shorter one): FF FE 00 00 split after two bytes is FF FE.
 */
export function bomLength(buf: Uint8Array): number {
  const n = buf.length;
  const b0 = buf[0];
  if (b0 === 0x00) return n >= 4 && buf[1] === 0x00 && buf[2] === 0xfe && buf[3] === 0xff ? 4 : 0;
  if (b0 === 0xff && n >= 2 && buf[1] === 0xfe) return n >= 4 && buf[2] === 0x00 && buf[3] === 0x00 ? 4 : 2;
  if (b0 === 0xef) return n >= 3 && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
  if (b0 === 0xfe) return n >= 2 && buf[1] === 0xff ? 2 : 0;
  return 0;
}

export const BOM_MAX_BYTES = 4;
