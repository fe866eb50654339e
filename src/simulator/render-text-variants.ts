/**
 * txt_cstr, txt_all and txt_allcstr pages (docs/report-export-service.md "Output types"; their layout is not shown,
 * these are the simulator's choices). All begin with a byte order mark like txt (render-txt.ts txtBom) and end lines
 * with CR LF.
 * - txt_cstr: the txt shape, every quoted value (and column name) coded as a C/Java string literal (pages/cstr.ts
 *   encodeCstr: `\\ \" \n \r \t …`, non-ASCII as `\uXXXX`, emoji as surrogate pairs).
 * - txt_all / txt_allcstr ("all report component elements"): a title line `"<report>","Seite",<page>`, the column
 *   header line, then the rows in groups of {@link GROUP_ROWS} (by row number across the report): a group header
 *   `"Gruppe",<g>` before a group's first row, the detail line, a group total `"Summe Gruppe",<g>,<rows>` after its
 *   last row, and on the last page the grand total `"Gesamt",<rows>`. txt_all quotes like txt, txt_allcstr like
 *   txt_cstr.
 */
import { encodeCstr } from './cstr-encode.ts';
import type { ReportData } from './catalogue.ts';
import { CHUNK_CHARS, type PageRenderer, type RenderContext } from './render-context.ts';
import { txtBom } from './render-txt.ts';

/** Detail rows per group in txt_all / txt_allcstr. */
export const GROUP_ROWS = 7;

const csvQuote = (s: string): string => (s.includes('"') ? `"${s.replaceAll('"', '""')}"` : `"${s}"`);
const cstrQuote = (s: string): string => `"${encodeCstr(s)}"`;

/** One detail line (without its line end) of rows[r], text quoted by `quote`. */
function detailLine(data: ReportData, r: number, ctx: RenderContext, quote: (s: string) => string): string {
  const cells = data.cells(r);
  let line = '';
  for (let c = 0; c < data.columns.length; c++) {
    if (c !== 0) line += ',';
    const v = cells[c];
    if (v === null || v === undefined) continue;
    if (typeof v === 'number') line += ctx.zone.txt(v);
    else if (data.columns[c]!.kind === 'text') line += quote(v);
    else line += v;
  }
  return line;
}

/** Renders rows [from, to) as a txt_cstr page. */
export function* renderTxtCstr(
  data: ReportData,
  from: number,
  to: number,
  ctx: RenderContext,
): Generator<string | Buffer> {
  yield txtBom(ctx.page);
  let buf = `${data.columns.map((c) => cstrQuote(c.name)).join(',')}\r\n`;
  for (let r = from; r < to; r++) {
    buf += `${detailLine(data, r, ctx, cstrQuote)}\r\n`;
    if (buf.length >= CHUNK_CHARS) {
      yield buf;
      buf = '';
    }
  }
  yield buf;
}

/** The txt_all (`cstr` false) or txt_allcstr (`cstr` true) renderer. */
export function renderTxtAll(cstr: boolean): PageRenderer {
  const quote = cstr ? cstrQuote : csvQuote;
  return function* (data, from, to, ctx) {
    yield txtBom(ctx.page);
    let buf = `${quote(ctx.report ?? 'Report')},${quote('Seite')},${ctx.page}\r\n`;
    buf += `${data.columns.map((c) => quote(c.name)).join(',')}\r\n`;
    for (let r = from; r < to; r++) {
      const group = Math.floor(r / GROUP_ROWS) + 1;
      if (r % GROUP_ROWS === 0) buf += `${quote('Gruppe')},${group}\r\n`;
      buf += `${detailLine(data, r, ctx, quote)}\r\n`;
      if (r % GROUP_ROWS === GROUP_ROWS - 1 || r === data.rowCount - 1) {
        buf += `${quote('Summe Gruppe')},${group},${r - (group - 1) * GROUP_ROWS + 1}\r\n`;
      }
      if (buf.length >= CHUNK_CHARS) {
        yield buf;
        buf = '';
      }
    }
    if (to >= data.rowCount) buf += `${quote('Gesamt')},${data.rowCount}\r\n`;
    yield buf;
  };
}
