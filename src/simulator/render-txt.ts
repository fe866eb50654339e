/**
 * txt pages (docs/report-export-service.md "Output page shapes": a header line of column names, repeated on every page;
 * text in double quotes, numbers bare, timestamps bare as dd.mm.yyyy hh:mm:ss.mmm), each page led by a byte order mark
 * (docs/report-export-service.md: "generally 1 to 4 bytes"). Choices where the service's description shows nothing: CSV
 * quoting (inner quotes doubled), NULL as an empty bare field, the empty string as "", lines ended by CR LF, the column
 * names in double quotes, timestamps in the simulator's zone.
 */
import type { ReportData } from './catalogue.ts';
import { CHUNK_CHARS, type RenderContext } from './render-context.ts';

const BOM_UTF8 = Buffer.from([0xef, 0xbb, 0xbf]);
const BOM_UTF16BE = Buffer.from([0xfe, 0xff]);
const BOM_UTF16LE = Buffer.from([0xff, 0xfe]);
const BOM_UTF32BE = Buffer.from([0x00, 0x00, 0xfe, 0xff]);
const BOM_UTF32LE = Buffer.from([0xff, 0xfe, 0x00, 0x00]);

/**
 * The byte order mark a txt page starts with, by page number (1-based): mostly EF BB BF; pages with
 * page % 7 == 3 get FE FF, page % 7 == 5 FF FE, else page % 11 == 4 gets 00 00 FE FF and page % 13 == 6
 * FF FE 00 00 (so pages 3, 4, 5, 6 show the four rarer marks). The text after it is UTF-8 whatever the mark.
 */
export function txtBom(page: number): Buffer {
  if (page % 7 === 3) return BOM_UTF16BE;
  if (page % 7 === 5) return BOM_UTF16LE;
  if (page % 11 === 4) return BOM_UTF32BE;
  if (page % 13 === 6) return BOM_UTF32LE;
  return BOM_UTF8;
}

function quote(s: string): string {
  return s.includes('"') ? `"${s.replaceAll('"', '""')}"` : `"${s}"`;
}

/** Renders rows [from, to) as a txt page: BOM, header line, one CR LF terminated line per row. */
export function* renderTxt(data: ReportData, from: number, to: number, ctx: RenderContext): Generator<string | Buffer> {
  yield txtBom(ctx.page);
  const kinds = data.columns.map((c) => c.kind);
  const n = kinds.length;
  const zone = ctx.zone;
  let buf = `${data.columns.map((c) => quote(c.name)).join(',')}\r\n`;
  for (let r = from; r < to; r++) {
    const cells = data.cells(r);
    for (let c = 0; c < n; c++) {
      if (c !== 0) buf += ',';
      const v = cells[c];
      if (v === null || v === undefined) continue;
      if (typeof v === 'number') buf += zone.txt(v);
      else if (kinds[c] === 'text') buf += quote(v);
      else buf += v;
    }
    buf += '\r\n';
    if (buf.length >= CHUNK_CHARS) {
      yield buf;
      buf = '';
    }
  }
  yield buf;
}
