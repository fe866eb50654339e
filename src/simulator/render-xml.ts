/**
 * xml_query pages (docs/report-export-service.md "Output page shapes": XML declaration, root element result, one row
 * element per row, one field element per column with attribute name and the value as text; empty text for empty
 * values). Choices where the service's description shows nothing: no whitespace between elements, NULL written as an
 * empty element <field name="X"/> and the empty string as <field name="X"></field> (both empty text), CR written as
 * &#13; so that XML line-end normalisation keeps it, timestamps ISO 8601 with offset.
 */
import type { ReportData } from './catalogue.ts';
import { CHUNK_CHARS, type RenderContext } from './render-context.ts';

const SPECIAL = /[&<>"\r]/;
const SPECIAL_G = /[&<>"\r]/g;
const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\r': '&#13;' };

/** XML-escapes text content and attribute values. */
export function xmlEscape(s: string): string {
  return SPECIAL.test(s) ? s.replace(SPECIAL_G, (ch) => ENTITIES[ch]!) : s;
}

/** Renders rows [from, to) as an xml_query page. */
export function* renderXml(data: ReportData, from: number, to: number, ctx: RenderContext): Generator<string> {
  const opens = data.columns.map((c) => `<field name="${xmlEscape(c.name)}"`);
  const kinds = data.columns.map((c) => c.kind);
  const n = kinds.length;
  const zone = ctx.zone;
  let buf = '<?xml version="1.0" encoding="UTF-8"?><result>';
  for (let r = from; r < to; r++) {
    const cells = data.cells(r);
    buf += '<row>';
    for (let c = 0; c < n; c++) {
      const v = cells[c];
      if (v === null || v === undefined) buf += `${opens[c]}/>`;
      else if (typeof v === 'number') buf += `${opens[c]}>${zone.iso(v)}</field>`;
      else buf += `${opens[c]}>${kinds[c] === 'text' ? xmlEscape(v) : v}</field>`;
    }
    buf += '</row>';
    if (buf.length >= CHUNK_CHARS) {
      yield buf;
      buf = '';
    }
  }
  buf += '</result>';
  yield buf;
}
