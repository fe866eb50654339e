/**
 * C/Java string literals of txt_cstr and txt_allcstr (docs/report-export-service.md "Output types"), decoded back to
 * the server's text: `\\ \" \' \n \r \t \b \f \v \a \0`, octal `\N`-`\NNN` (up to \377), `\xHH` and `\uXXXX` (UTF-16
 * units, surrogate pairs joined). Where C and Java differ, octal and `\x` escapes are bytes (C): `\xC3\xA4` is
 * "ä"; bytes that are not UTF-8, an unknown escape, a lone surrogate and a trailing backslash are refused. The coding
 * side is simulator/cstr-encode.ts.
 */
import { isUtf8 } from 'node:buffer';
import { BACKSLASH, hexAt, writeUtf8 } from './bytes.ts';

/** Single-character escapes: the byte after the backslash → the byte it stands for. */
const SIMPLE = new Int16Array(256).fill(-1);
for (const [c, v] of [
  ['\\', 0x5c],
  ['"', 0x22],
  ["'", 0x27],
  ['n', 0x0a],
  ['r', 0x0d],
  ['t', 0x09],
  ['b', 0x08],
  ['f', 0x0c],
  ['v', 0x0b],
  ['a', 0x07],
  ['?', 0x3f],
] as const) {
  SIMPLE[c.charCodeAt(0)] = v;
}

/** Thrown by {@link decodeCstr}: what is wrong, and the index in the input of the offending escape. */
export class CstrError extends Error {
  readonly index: number;
  constructor(message: string, index: number) {
    super(message);
    this.index = index;
  }
}

/** Result flags of {@link decodeCstr}. */
export interface CstrResult {
  /** Index in `out` after the decoded bytes. */
  end: number;
  /** The value held a byte escape (octal or \x): the caller checks the decoded bytes are valid UTF-8. */
  byteEscapes: boolean;
  /** The value decoded to a NUL character somewhere (PostgreSQL text cannot hold it). */
  nul: boolean;
}

const result: CstrResult = { end: 0, byteEscapes: false, nul: false };

/**
 * Decodes the C/Java-coded bytes b[s..e) (between the quotes) into plain UTF-8 at out[op..]. The output is never
 * longer than the input, so `out` needs room for e - s bytes.
 * @returns a shared result object (valid until the next call)
 * @throws CstrError for an unknown escape, a bad \x or \u, a lone surrogate, or a backslash at the end
 */
export function decodeCstr(b: Uint8Array, s: number, e: number, out: Uint8Array, op: number): CstrResult {
  result.byteEscapes = false;
  result.nul = false;
  let i = s;
  while (i < e) {
    const c = b[i]!;
    if (c !== BACKSLASH) {
      out[op++] = c;
      i++;
      continue;
    }
    if (i + 1 >= e) throw new CstrError('backslash at the end of a value', i);
    const x = b[i + 1]!;
    const simple = SIMPLE[x]!;
    if (simple >= 0) {
      out[op++] = simple;
      i += 2;
    } else if (x >= 0x30 && x <= 0x37) {
      let v = x - 0x30;
      let j = i + 2;
      while (j < e && j < i + 4 && b[j]! >= 0x30 && b[j]! <= 0x37) v = v * 8 + (b[j++]! - 0x30);
      if (v > 0xff)
        throw new CstrError(`octal escape ${Buffer.from(b.subarray(i, j)).toString('latin1')} is beyond \\377`, i);
      if (v === 0) result.nul = true;
      else if (v >= 0x80) result.byteEscapes = true;
      out[op++] = v;
      i = j;
    } else if (x === 0x78) {
      const v = hexAt(b, i + 2, 2, e);
      if (v < 0) throw new CstrError('\\x needs two hex digits', i);
      if (v === 0) result.nul = true;
      else if (v >= 0x80) result.byteEscapes = true;
      out[op++] = v;
      i += 4;
    } else if (x === 0x75) {
      let cp = hexAt(b, i + 2, 4, e);
      if (cp < 0) throw new CstrError('\\u needs four hex digits', i);
      let next = i + 6;
      if (cp >= 0xd800 && cp <= 0xdbff) {
        const low = b[next] === BACKSLASH && b[next + 1] === 0x75 ? hexAt(b, next + 2, 4, e) : -1;
        if (low < 0xdc00 || low > 0xdfff)
          throw new CstrError(`high surrogate \\u${cp.toString(16).toUpperCase()} without a low surrogate after it`, i);
        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        next += 6;
      } else if (cp >= 0xdc00 && cp <= 0xdfff) {
        throw new CstrError(`low surrogate \\u${cp.toString(16).toUpperCase()} without a high surrogate before it`, i);
      }
      if (cp === 0) result.nul = true;
      op = writeUtf8(cp, out, op);
      i = next;
    } else {
      const shown = x >= 0x20 && x < 0x7f ? String.fromCharCode(x) : `0x${x.toString(16)}`;
      throw new CstrError(`unknown escape \\${shown}`, i);
    }
  }
  result.end = op;
  return result;
}

/**
 * {@link decodeCstr} of a quoted value into `out` (room for e - s bytes), refusing what PostgreSQL text cannot hold;
 * returns its length.
 * @throws CstrError (message and index for the caller's PageFormatError) for a malformed escape, a NUL, or byte escapes
 *   that are not UTF-8
 */
export function decodeCstrText(b: Uint8Array, s: number, e: number, out: Buffer): number {
  let r: CstrResult;
  try {
    r = decodeCstr(b, s, e, out, 0);
  } catch (err) {
    if (err instanceof CstrError) throw new CstrError(`malformed C/Java string: ${err.message}`, err.index);
    throw err;
  }
  if (r.nul) throw new CstrError('the value holds a NUL character (\\0), which PostgreSQL text cannot store', s);
  if (r.byteEscapes && !isUtf8(out.subarray(0, r.end)))
    throw new CstrError('the octal or \\x escapes of the value do not form UTF-8 text', s);
  return r.end;
}
