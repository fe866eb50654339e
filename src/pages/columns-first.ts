/**
 * What the decoders that can write COPY binary format share (page-decoder.ts useBinary): they tell their reader the
 * columns — with an empty Buffer — as soon as they are known and before any row is decoded, so that the loader can
 * choose the format first.
 */

/** The empty Buffer that says "the columns are known now". */
export const NO_ROWS: Buffer = Buffer.alloc(0);

/**
 * Runs `scan` over `buf`, advancing `st.offset` by what it consumed; when that scan learned the columns
 * (`tookColumns()` says so once), first yields {@link NO_ROWS}, then scans the rest of `buf`.
 * @param scan scans whole units from the start of its argument; returns the index after the last whole one
 * @returns the index in `buf` after the last whole unit
 */
export function* scanTellingColumns(buf: Buffer, st: { offset: number }, scan: (b: Buffer) => number, tookColumns: () => boolean): Generator<Buffer, number> {
  let consumed = scan(buf);
  st.offset += consumed;
  if (tookColumns()) {
    yield NO_ROWS;
    const more = scan(buf.subarray(consumed));
    st.offset += more;
    consumed += more;
  }
  return consumed;
}
