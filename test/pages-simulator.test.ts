/**
 * The decoders against the simulator's own page renderers (src/simulator): every output type of a catalogue
 * report is rendered as the simulator serves it, decoded in odd chunk sizes, and compared with the
 * catalogue's canonical values (reportData).
 */
import { describe, expect, it } from 'vitest';
import { makePageDecoder } from '../src/pages/decoder.ts';
import { CATALOGUE, reportData } from '../src/simulator/index.ts';
import { pageRenderer } from '../src/simulator/render.ts';

/** The output types whose pages hold typed rows in the service's shapes (the other types have tests of their own). */
const SIMULATED_OUTPUT_TYPES = ['json', 'json_compact', 'txt', 'xml_query', 'txt_cstr'] as const;
import { makeZonedFormatter } from '../src/simulator/time-format.ts';
import { decodeAll, parseCopyText, parsePgCsv } from './pages-support.ts';

const PAGING = 37;

function renderPage(
  type: (typeof SIMULATED_OUTPUT_TYPES)[number],
  data: NonNullable<ReturnType<typeof reportData>>,
  page: number,
): Buffer {
  const from = (page - 1) * PAGING;
  const parts = [
    ...pageRenderer(type)(data, from, Math.min(data.rowCount, from + PAGING), {
      zone: makeZonedFormatter('UTC'),
      page,
    }),
  ];
  return Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
}

/** A decoded value in the canonical form of reportData, by column kind. */
function canonical(v: string | null, kind: string): string | null {
  if (v === null) return null;
  if (kind === 'timestamp') {
    const m = /^(\d\d)\.(\d\d)\.(\d{4}) (\d\d:\d\d:\d\d\.\d{3})$/.exec(v);
    return new Date(m ? `${m[3]}-${m[2]}-${m[1]}T${m[4]}Z` : v).toISOString();
  }
  return v;
}

describe('decoders on simulator pages', () => {
  // Reports that end FinishedError, or whose rows do not follow their columns (Empty.avw), serve no pages.
  const entries = CATALOGUE.filter((e) => {
    const data = reportData(e.path, { ROWS: '100' }, 7);
    return (
      data !== undefined &&
      data.failure === undefined &&
      data.rowCount > 0 &&
      data.row(0).length === data.columns.length
    );
  });
  it('covers at least two catalogue reports', () => expect(entries.length).toBeGreaterThanOrEqual(2));
  for (const type of SIMULATED_OUTPUT_TYPES) {
    for (const entry of entries) {
      it(`${type} ${entry.path}: values equal reportData`, async () => {
        const data = reportData(entry.path, { ROWS: '100' }, 7)!;
        const pages = Array.from({ length: Math.ceil(data.rowCount / PAGING) }, (_v, k) =>
          renderPage(type, data, k + 1),
        );
        const d = makePageDecoder(type);
        const out = await decodeAll(d, pages, 'random', 5);
        const rows = type === 'txt' ? parsePgCsv(out) : parseCopyText(out);
        expect(d.columns).toEqual(data.columns.map((c) => c.name));
        expect(d.rows).toBe(data.rowCount);
        const expected = Array.from({ length: data.rowCount }, (_v, i) =>
          data
            .row(i)
            .map((v, k) =>
              type === 'xml_query' && v === '' ? null : v === null ? null : canonical(v, data.columns[k]!.kind),
            ),
        );
        expect(rows.map((r) => r.map((v, k) => canonical(v, data.columns[k]!.kind)))).toEqual(expected);
      });
    }
  }
});
