/**
 * Joins a page's chunks for a parser of whole units (rows, records): the incomplete last unit is carried to the next
 * chunk. A large tail waits until the data doubles, so a huge value is not scanned again for every chunk; a unit past
 * `maxUnitBytes` calls `tooLarge`, which throws the decoder's error: memory stays about twice the limit at most.
 */

/** Tails under this many bytes are joined with every next chunk; larger ones wait for twice the data. */
const SMALL_TAIL = 64 * 1024;
/** {@link ChunkCarry.pushStitched}: bytes of a chunk joined with a small tail. */
const STITCH_BYTES = 4096;

export class ChunkCarry {
  private parts: Buffer[] = [];
  private bytes = 0;
  private want = 0;
  private readonly maxUnitBytes: number;
  private readonly tooLarge: (held: readonly Buffer[], bytes: number) => never;

  /** @param tooLarge throws the decoder's error for a unit past `maxUnitBytes`, given the held bytes */
  constructor(maxUnitBytes: number, tooLarge: (held: readonly Buffer[], bytes: number) => never) {
    this.maxUnitBytes = maxUnitBytes;
    this.tooLarge = tooLarge;
  }

  /** Adds a chunk: the bytes to parse now (the tail and the chunks, or a view of the chunk), or undefined: wait. */
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
   * {@link push} without copying a large chunk behind a small tail: the tail and the chunk's first 4 KiB. Parse it,
   * then parse what {@link next} returns, until undefined.
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

  /** After `buf` was parsed up to `consumed`: the rest of a stitched chunk, or undefined (the unparsed end kept). */
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

  /** After `buf` was parsed up to `consumed`, for another parser: every byte not parsed yet; nothing is kept. */
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
    return this.tooLarge(held, bytes);
  }

  private drain(): Buffer {
    const out = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.bytes);
    this.parts = [];
    this.bytes = 0;
    this.want = 0;
    return out;
  }
}
