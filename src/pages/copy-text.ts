import { BACKSLASH, CR, LETTER_N, LF, TAB } from './bytes.ts';

/**
 * Output side of the page decoders: whole COPY rows written into slabs, and COPY text-format escaping (backslash ->
 * \\, LF -> \n, CR -> \r, tab -> \t, NULL -> \N; columns separated by a tab, rows end with \n).
 */

/** Default slab size in bytes: one 64 KiB input chunk's rows fit several times. */
const SLAB_BYTES = 1 << 20;

/** Bytes of rows a decoder gathers before it hands them out ({@link CopyOutput.takeFull}). */
const TAKE_BYTES = 128 * 1024;

/**
 * Where decoders write COPY bytes: `buf[start..pos)` holds rows not yet handed out. {@link take} hands them out as a
 * subarray and never writes those bytes again (a COPY stream may keep them). Hot paths read `buf`/`pos` into locals,
 * write, and store `pos` back, after {@link reserve} made room.
 */
export class CopyOutput {
  buf: Buffer;
  pos = 0;
  start = 0;

  constructor(slabBytes: number = SLAB_BYTES) {
    this.buf = Buffer.allocUnsafe(slabBytes);
  }

  /**
   * Makes room for `bytes` more bytes after `pos`. May move the pending region to a new slab, so positions
   * kept across a call must be relative to `start` (see {@link mark} / {@link reset}).
   */
  reserve(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    const pending = this.pos - this.start;
    const next = Buffer.allocUnsafe(Math.max(SLAB_BYTES, (pending + bytes) * 2));
    this.buf.copy(next, 0, this.start, this.pos);
    this.buf = next;
    this.start = 0;
    this.pos = pending;
  }

  /** Position of the next byte relative to `start`, stable across {@link reserve}. */
  mark(): number {
    return this.pos - this.start;
  }

  /** Drops everything written after `mark` (a row that turned out incomplete). */
  reset(mark: number): void {
    this.pos = this.start + mark;
  }

  /** Hands out the bytes written since the last take (whole rows), or undefined when there are none. */
  take(): Buffer | undefined {
    if (this.pos === this.start) return undefined;
    const out = this.buf.subarray(this.start, this.pos);
    this.start = this.pos;
    if (this.buf.length - this.pos < SLAB_BYTES >> 4) {
      this.buf = Buffer.allocUnsafe(SLAB_BYTES);
      this.start = this.pos = 0;
    }
    return out;
  }

  /**
   * {@link take} once at least {@link TAKE_BYTES} are pending, else undefined: the rows wait for more, so that COPY
   * gets fewer, larger Buffers (each one costs a hop through every stream stage and two socket writes). A decoder
   * takes what is left at the end of a page.
   */
  takeFull(): Buffer | undefined {
    return this.pos - this.start >= TAKE_BYTES ? this.take() : undefined;
  }

  /** Writes `\N` (NULL). Caller reserved 2 bytes. */
  writeNull(): void {
    this.buf[this.pos++] = BACKSLASH;
    this.buf[this.pos++] = LETTER_N;
  }
}

/**
 * Copies src[s..e) into out at `op`, COPY-text-escaping backslash, LF, CR and tab; returns the new position.
 * The caller reserved 2 * (e - s) bytes.
 */
export function writeEscapedBytes(src: Uint8Array, s: number, e: number, out: Uint8Array, op: number): number {
  for (let i = s; i < e; i++) {
    const c = src[i]!;
    if (c !== BACKSLASH && c !== LF && c !== CR && c !== TAB) {
      out[op++] = c;
      continue;
    }
    out[op++] = BACKSLASH;
    out[op++] = c === LF ? 0x6e : c === CR ? 0x72 : c === TAB ? 0x74 : BACKSLASH;
  }
  return op;
}

const NEEDS_ESCAPE = /[\\\n\r\t]/;

/**
 * Writes `value` as UTF-8 into `out`, COPY-text-escaped (no NUL allowed: PostgreSQL text cannot hold it;
 * the caller checks). Reserves room itself. Used where values already are strings (xml_query via saxes).
 */
export function writeEscapedString(out: CopyOutput, value: string): void {
  const max = value.length * 3;
  out.reserve(NEEDS_ESCAPE.test(value) ? max * 2 : max);
  if (!NEEDS_ESCAPE.test(value)) {
    out.pos += out.buf.write(value, out.pos, 'utf8');
    return;
  }
  const tmp = Buffer.from(value, 'utf8');
  out.pos = writeEscapedBytes(tmp, 0, tmp.length, out.buf, out.pos);
}
