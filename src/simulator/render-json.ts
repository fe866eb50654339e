/**
 * json and json_compact pages (docs/report-export-service.md "Output page shapes": an object with one member data, an
 * array of row objects keyed by column name; numbers are JSON numbers, timestamps ISO 8601 strings with offset). Pretty
 * output follows the layout of Jackson's default pretty printer. Numbers are written with their exact digits, never
 * through a JS number.
 */
import type { ReportData } from './catalogue.ts';
import { CHUNK_CHARS, type RenderContext } from './render-context.ts';

/**
 * Renders rows [from, to) as a json page.
 * @param pretty true: json (line feeds and spaces); false: json_compact
 */
export function* renderJson(
  data: ReportData,
  from: number,
  to: number,
  ctx: RenderContext,
  pretty: boolean,
): Generator<string> {
  const cols = data.columns;
  const keys = cols.map((c, i) => {
    const k = JSON.stringify(c.name);
    if (pretty) return `${i === 0 ? '{\n    ' : ',\n    '}${k} : `;
    return `${i === 0 ? '{' : ','}${k}:`;
  });
  const rowEnd = pretty ? '\n  }' : '}';
  const rowSep = pretty ? ', ' : ',';
  const kinds = cols.map((c) => c.kind);
  const n = cols.length;
  const zone = ctx.zone;
  let buf = pretty ? '{\n  "data" : [ ' : '{"data":[';
  if (from >= to && pretty) buf = '{\n  "data" : [';
  for (let r = from; r < to; r++) {
    const cells = data.cells(r);
    if (r !== from) buf += rowSep;
    if (data.missingKeys && cells.includes(undefined as unknown as null)) {
      buf += rowLackingKeys(cells, cols, pretty, zone);
      continue;
    }
    for (let c = 0; c < n; c++) {
      const v = cells[c];
      buf += keys[c]!;
      if (v === null || v === undefined) buf += 'null';
      else if (typeof v === 'number') buf += `"${zone.iso(v)}"`;
      else if (kinds[c] === 'text') buf += JSON.stringify(v);
      else buf += v;
    }
    buf += n === 0 ? (pretty ? '{ }' : '{}') : rowEnd;
    if (buf.length >= CHUNK_CHARS) {
      yield buf;
      buf = '';
    }
  }
  buf += pretty ? ' ]\n}' : ']}';
  yield buf;
}

/** A row whose `undefined` cells leave their keys out (ReportData.missingKeys), in the layout of the others. */
function rowLackingKeys(
  cells: readonly (string | number | null | undefined)[],
  cols: ReportData['columns'],
  pretty: boolean,
  zone: RenderContext['zone'],
): string {
  const parts: string[] = [];
  for (const [c, col] of cols.entries()) {
    const v = cells[c];
    if (v === undefined) continue;
    const value =
      v === null ? 'null' : typeof v === 'number' ? `"${zone.iso(v)}"` : col.kind === 'text' ? JSON.stringify(v) : v;
    parts.push(`${JSON.stringify(col.name)}${pretty ? ' : ' : ':'}${value}`);
  }
  if (parts.length === 0) return pretty ? '{ }' : '{}';
  return pretty ? `{\n    ${parts.join(',\n    ')}\n  }` : `{${parts.join(',')}}`;
}
