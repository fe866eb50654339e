/**
 * A run of bytes that the decoders expect to see again and again at known places of a page — an xml_query field's
 * open tag, the whitespace and key between two json values — compared eight bytes at a time: as the little-endian
 * float64 words of a DataView over the page bytes, which V8 reads in one instruction each, rather than byte by byte.
 *
 * Two float64 words are equal as numbers exactly when their bytes are, except NaN (never equal to anything) and ±0
 * (equal to each other): a run with such a word, which text without NUL and DEL bytes never makes, is compared byte by
 * byte instead, as are runs shorter than eight bytes.
 */

/** The bytes of a run and their words; see the file comment. */
export class ByteRun {
  readonly bytes: Buffer;
  /** Words at offsets 0, 8, 16, … and a last one ending with the run (overlapping the one before); undefined: byte by byte. */
  private readonly words: Float64Array | undefined;

  /** @param bytes copied: the run may outlive the page it was read from */
  constructor(bytes: Uint8Array) {
    this.bytes = Buffer.from(bytes);
    this.words = wordsOf(this.bytes);
  }

  get length(): number {
    return this.bytes.length;
  }

  /**
   * Whether b[i..] begins with the run; `dv` is a DataView over exactly `b`. The caller made sure that `length` bytes
   * are there.
   */
  at(dv: DataView, b: Uint8Array, i: number): boolean {
    const words = this.words;
    if (words === undefined) {
      const bytes = this.bytes;
      for (let k = 0; k < bytes.length; k++) if (b[i + k] !== bytes[k]) return false;
      return true;
    }
    const last = words.length - 1;
    for (let w = 0; w < last; w++) if (dv.getFloat64(i + 8 * w, true) !== words[w]) return false;
    return dv.getFloat64(i + this.bytes.length - 8, true) === words[last];
  }
}

function wordsOf(bytes: Buffer): Float64Array | undefined {
  if (bytes.length < 8) return undefined;
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const count = Math.ceil(bytes.length / 8);
  const words = new Float64Array(count);
  for (let w = 0; w < count; w++) {
    const x = dv.getFloat64(w === count - 1 ? bytes.length - 8 : 8 * w, true);
    if (Number.isNaN(x) || x === 0) return undefined;
    words[w] = x;
  }
  return words;
}

/** A DataView over exactly the bytes of `b`, for {@link ByteRun.at}. */
export function viewOf(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}
