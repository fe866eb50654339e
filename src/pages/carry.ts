/**
 * Joins a page's chunks for a parser that works on whole units (a row, a record) and leaves an incomplete
 * last unit for the next chunk. The incomplete tail is carried and prepended to the next chunk. A unit
 * bigger than a chunk (a huge text value) is not re-scanned for every chunk: once the tail is large, chunks
 * are gathered until the data at least doubles, so the work stays linear in the page size.
 *
 * A unit may not grow past `maxUnitBytes` (a row holding a value larger than the job's `maxValueBytes`):
 * the carry then calls `tooLarge` with what it holds, which throws the decoder's error naming page, row and
 * column. So a page holding one enormous value costs at most about twice the limit, never the value's size.
 */

/** Tails smaller than this (bytes) are joined with every next chunk; larger ones wait for 2x the data. */
const SMALL_TAIL = 64 * 1024;
/** {@link ChunkCarry.pushStitched}: bytes of the next chunk joined with a small tail; chunks of over twice this. */
const STITCH_BYTES = 4096;

/** Carries an incomplete tail between chunks; see the file comment. */
export class ChunkCarry {
  private parts: Buffer[] = [];
  private bytes = 0;
  private want = 0;
  private readonly maxUnitBytes: number;
  private readonly tooLarge: ((held: readonly Buffer[], bytes: number) => never) | undefined;

  /**
   * @param maxUnitBytes largest unit (row) the parser may need whole, in bytes (default: no limit)
   * @param tooLarge throws the decoder's error for a unit past the limit; gets the held bytes, the unit's start first
   */
  constructor(maxUnitBytes = Infinity, tooLarge?: (held: readonly Buffer[], bytes: number) => never) {
    this.maxUnitBytes = maxUnitBytes;
    this.tooLarge = tooLarge;
  }

  /**
   * Adds a chunk; returns the bytes to parse now (tail + gathered chunks), or undefined to wait for more.
   * The returned Buffer may be a view of `chunk` itself (no copy) when nothing is carried.
   */
  push(chunk: Uint8Array): Buffer | undefined {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.bytes === 0) return b;
    this.parts.push(b);
    this.bytes += b.length;
    if (this.bytes > this.maxUnitBytes) this.refuse();
    if (this.bytes < this.want) return undefined;
    return this.drain();
  }

  /**
   * {@link push} without copying a large chunk behind a small tail: returns the tail joined with only the chunk's
   * first 4 KiB, and keeps the rest of the chunk. Parse what it returns, then call {@link next} with how much was
   * consumed, parse what that returns, and so on until it returns undefined.
   */
  pushStitched(chunk: Uint8Array): Buffer | undefined {
    if (this.bytes === 0 || this.bytes >= SMALL_TAIL || chunk.length <= 2 * STITCH_BYTES) return this.push(chunk);
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const tail = this.parts[0]!;
    this.parts = [];
    this.bytes = 0;
    this.want = 0;
    this.stitchedChunk = b;
    this.stitchedTail = tail.length;
    return Buffer.concat([tail, b.subarray(0, STITCH_BYTES)], tail.length + STITCH_BYTES);
  }

  /**
   * After `buf` (what push, pushStitched or next returned) was parsed up to `consumed`: the next bytes to parse — the
   * rest of a stitched chunk, as a view of it once the tail was consumed — or undefined, with the unparsed end kept.
   */
  next(buf: Buffer, consumed: number): Buffer | undefined {
    const chunk = this.stitchedChunk;
    if (chunk === undefined) {
      this.keep(buf.subarray(consumed));
      return undefined;
    }
    this.stitchedChunk = undefined;
    if (consumed >= this.stitchedTail) return chunk.subarray(consumed - this.stitchedTail);
    return Buffer.concat([buf.subarray(consumed), chunk.subarray(STITCH_BYTES)]);
  }

  /**
   * After `buf` (what push, pushStitched or next returned) was parsed up to `consumed`, when the parser stops for good
   * (another parser takes the rest): every byte not parsed yet — the rest of a stitched chunk included — and nothing
   * is kept.
   */
  remainder(buf: Buffer, consumed: number): Buffer {
    const chunk = this.stitchedChunk;
    this.stitchedChunk = undefined;
    this.parts = [];
    this.bytes = 0;
    this.want = 0;
    if (chunk === undefined) return buf.subarray(consumed);
    if (consumed >= this.stitchedTail) return chunk.subarray(consumed - this.stitchedTail);
    return Buffer.concat([buf.subarray(consumed), chunk.subarray(STITCH_BYTES)]);
  }

  private stitchedChunk: Buffer | undefined;
  private stitchedTail = 0;

  /** Keeps `tail` (the unparsed end of the last returned buffer) for the next chunk. Copies small tails. */
  keep(tail: Buffer): void {
    if (tail.length === 0) {
      this.parts = [];
      this.bytes = 0;
      this.want = 0;
      return;
    }
    this.parts = [tail.length < SMALL_TAIL ? Buffer.from(tail) : tail];
    this.bytes = tail.length;
    if (this.bytes > this.maxUnitBytes) this.refuse();
    this.want = tail.length < SMALL_TAIL ? 0 : tail.length * 2;
  }

  /** At the end of the page: whatever is still held (undefined when nothing). */
  finish(): Buffer | undefined {
    if (this.bytes === 0) return undefined;
    return this.drain();
  }

  private refuse(): never {
    const held = this.parts;
    const bytes = this.bytes;
    this.parts = [];
    this.bytes = 0;
    if (this.tooLarge) this.tooLarge(held, bytes);
    throw new RangeError(`a unit of more than ${this.maxUnitBytes} bytes`);
  }

  private drain(): Buffer {
    const out = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.bytes);
    this.parts = [];
    this.bytes = 0;
    this.want = 0;
    return out;
  }
}
