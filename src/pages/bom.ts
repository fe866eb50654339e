/**
 * Byte order marks of text pages (docs/report-export-service.md "Output page shapes": text output types begin each data page with
 * a byte order mark of generally 1 to 4 bytes, which a client may strip).
 */

/**
 * Length in bytes of the byte order mark at the start of `buf`, 0 if none. Recognised, longest first:
 * 00 00 FE FF (UTF-32 BE), FF FE 00 00 (UTF-32 LE), EF BB BF (UTF-8), FE FF (UTF-16 BE), FF FE (UTF-16 LE).
 * A caller holding fewer than 4 bytes of a page should wait for more before asking (see {@link BOM_MAX_BYTES}),
 * otherwise FF FE 00 00 split after two bytes is taken for FF FE.
 */
export function bomLength(buf: Uint8Array): number {
  const n = buf.length;
  if (n === 0) return 0;
  const b0 = buf[0];
  if (b0 === 0x00) {
    return n >= 4 && buf[1] === 0x00 && buf[2] === 0xfe && buf[3] === 0xff ? 4 : 0;
  }
  if (b0 === 0xff) {
    if (n >= 2 && buf[1] === 0xfe) return n >= 4 && buf[2] === 0x00 && buf[3] === 0x00 ? 4 : 2;
    return 0;
  }
  if (b0 === 0xef) return n >= 3 && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
  if (b0 === 0xfe) return n >= 2 && buf[1] === 0xff ? 2 : 0;
  return 0;
}

/** The longest byte order mark, in bytes: gather this many bytes of a page (or all of it) before {@link bomLength}. */
export const BOM_MAX_BYTES = 4;
