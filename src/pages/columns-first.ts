/**
 * What the decoders that can write COPY binary format share (page-decoder.ts useBinary): they tell their reader the
 * columns — with an empty Buffer — as soon as they are known and before any row is decoded, so that the loader can
 * choose the format first.
 */

/** The empty Buffer that says "the columns are known now". */
export const NO_ROWS: Buffer = Buffer.alloc(0);

/** A decoder's note that it has just learned the columns, set by its scan and taken by {@link ColumnsSignal.scanAll}. */
export class ColumnsSignal {
  /** Set by the scan that read the columns (page 1's header, the first row's keys); the scan then stops there. */
  learned = false;

  /**
   * Runs `scan` over `buf`, advancing `st.offset` by what it consumed; when that scan learned the columns, first
   * yields {@link NO_ROWS}, then scans the rest of `buf`.
   * @param scan scans whole units from the start of its argument; returns the index after the last whole one
   * @returns the index in `buf` after the last whole unit
   */
  *scanAll(buf: Buffer, st: { offset: number }, scan: (b: Buffer) => number): Generator<Buffer, number> {
    let consumed = scan(buf);
    st.offset += consumed;
    if (this.learned) {
      this.learned = false;
      yield NO_ROWS;
      const more = scan(buf.subarray(consumed));
      st.offset += more;
      consumed += more;
    }
    return consumed;
  }
}
