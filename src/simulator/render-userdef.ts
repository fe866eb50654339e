/**
 * The report-defined shapes (docs/report-export-service.md "Output types": json_userdef, json_userdef_compact, xml —
 * "as defined by the report output"; not shown, so the simulator defines one for every report):
 * - json_userdef: `{"meta": {"report", "page", "rows"}, "body": {"orders": [ row objects like json ]},
 *   "totals": {"rows"}}`, pretty (two-space indent); json_userdef_compact the same without white space. The rows
 *   are at the JSON pointer `/body/orders` (jobs.yaml `target.rowsAt`).
 * - xml: `<report name=… page=…><orders><order>` one element per column (the column name with every character
 *   outside A-Z a-z 0-9 _ as `_`; NULL leaves the element out, the empty string is an empty element) `</order>…
 *   </orders><totals rows=…/></report>`, with an XML declaration and a line per order.
 */
import type { ReportData } from './catalogue.ts';
import { CHUNK_CHARS, type RenderContext } from './render-context.ts';
import { xmlEscape } from './render-xml.ts';

/** Where the json_userdef rows are (RFC 6901), for jobs.yaml `target.rowsAt`. */
export const USERDEF_ROWS_POINTER = '/body/orders';

function jsonValue(data: ReportData, c: number, v: string | number | null | undefined, ctx: RenderContext): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'number') return `"${ctx.zone.iso(v)}"`;
  return data.columns[c]!.kind === 'text' ? JSON.stringify(v) : v;
}

/** Renders rows [from, to) as a json_userdef (`pretty`) or json_userdef_compact page. */
export function* renderJsonUserdef(
  data: ReportData,
  from: number,
  to: number,
  ctx: RenderContext,
  pretty: boolean,
): Generator<string> {
  const nl = pretty ? '\n' : '';
  const sp = pretty ? ' ' : '';
  const ind = (n: number): string => (pretty ? '  '.repeat(n) : '');
  const meta =
    `{${nl}${ind(1)}"meta":${sp}{${sp}"report":${sp}${JSON.stringify(ctx.report ?? 'Report')},${sp}"page":` +
    `${sp}${ctx.page},${sp}"rows":${sp}${to - from}${sp}},${nl}`;
  let buf = `${meta}${ind(1)}"body":${sp}{${nl}${ind(2)}"orders":${sp}[`;
  for (let r = from; r < to; r++) {
    const cells = data.cells(r);
    buf += `${r === from ? '' : ','}${nl}${ind(3)}{`;
    for (let c = 0; c < data.columns.length; c++) {
      buf +=
        `${c === 0 ? '' : ','}${sp}${JSON.stringify(data.columns[c]!.name)}:${sp}` +
        `${jsonValue(data, c, cells[c], ctx)}`;
    }
    buf += `${sp}}`;
    if (buf.length >= CHUNK_CHARS) {
      yield buf;
      buf = '';
    }
  }
  buf +=
    `${to > from ? `${nl}${ind(2)}` : ''}]${nl}${ind(1)}},${nl}${ind(1)}"totals":${sp}{${sp}"rows":${sp}` +
    `${data.rowCount}${sp}}${nl}}${nl}`;
  yield buf;
}

/** An XML element name for a column name (see the file comment). */
export function xmlElementName(column: string): string {
  const n = column.replace(/[^A-Za-z0-9_]/g, '_');
  return /^[A-Za-z_]/.test(n) ? n : `_${n}`;
}

/** Renders rows [from, to) as an xml page. */
export function* renderXmlUserdef(data: ReportData, from: number, to: number, ctx: RenderContext): Generator<string> {
  const names = data.columns.map((c) => xmlElementName(c.name));
  let buf =
    `<?xml version="1.0" encoding="UTF-8"?>\n<report name="${xmlEscape(ctx.report ?? 'Report')}" ` +
    `page="${ctx.page}">\n  <orders>\n`;
  for (let r = from; r < to; r++) {
    const cells = data.cells(r);
    buf += '    <order>';
    for (let c = 0; c < names.length; c++) {
      const v = cells[c];
      if (v === null || v === undefined) continue;
      const text = typeof v === 'number' ? ctx.zone.iso(v) : xmlEscape(v);
      buf += `<${names[c]}>${text}</${names[c]}>`;
    }
    buf += '</order>\n';
    if (buf.length >= CHUNK_CHARS) {
      yield buf;
      buf = '';
    }
  }
  buf += `  </orders>\n  <totals rows="${data.rowCount}"/>\n</report>\n`;
  yield buf;
}
