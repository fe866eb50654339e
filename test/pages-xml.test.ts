/**
 * xml_query decoder (src/pages/xml-decoder.ts): values (entities, CDATA, UTF-8 split across chunks),
 * empty text -> NULL, column order and missing fields, kinds, malformed XML and unknown fields.
 */
import { describe, expect, it } from 'vitest';
import { makePageDecoder, KIND, PageFormatError } from '../src/pages/decoder.ts';
import type { XmlQueryPageDecoder } from '../src/pages/xml-decoder.ts';
import { inferColumnType } from '../src/warehouse/column-types.ts';
import { decodeAll, parseCopyText } from './pages-support.ts';

const esc = (s: string): string => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
const TEXTS = [
  'Müller & Söhne',
  'Bäckerei "Zum Löwen"',
  '日本商事 😀',
  'Zeile 1\nZeile 2',
  'Tab\there',
  'back\\slash',
  '<tag>',
  '€',
];

function page(rows: (string | null)[][], names: string[], orderOf?: (i: number) => number[]): Buffer {
  const parts = ['<?xml version="1.0" encoding="UTF-8"?>\n<result>\n'];
  rows.forEach((row, i) => {
    const order = orderOf?.(i) ?? names.map((_n, k) => k);
    const fields = order.map((k) => `<field name="${esc(names[k]!)}">${row[k] === null ? '' : esc(row[k]!)}</field>`);
    parts.push(`  <row>${fields.join('')}</row>\n`);
  });
  parts.push('</result>\n');
  return Buffer.from(parts.join(''));
}

describe('xml_query decoder', () => {
  const names = ['Kunde', 'Menge', 'Betrag', 'Erfasst am', 'Groß & Klein'];
  const rows = Array.from({ length: 50 }, (_v, i): (string | null)[] => [
    TEXTS[i % TEXTS.length]!,
    i % 5 === 0 ? null : String(i * 37 - 400),
    i % 2 ? '-12.50' : '9223372036854775808',
    '2024-03-01T12:34:56.789+01:00',
    i % 3 ? `v${i}` : null,
  ]);

  for (const size of [1, 7, 'random', 65536] as const) {
    it(`decodes rows, entities and multi-byte UTF-8, chunks of ${size} bytes`, async () => {
      const d = makePageDecoder('xml_query');
      expect(d.copyFormat).toBe('text');
      const out = await decodeAll(
        d,
        [page(rows, names), page(rows, names, (i) => (i % 2 ? [4, 3, 2, 1, 0] : [0, 1, 2, 3, 4]))],
        size,
      );
      expect(parseCopyText(out)).toEqual([...rows, ...rows]);
      expect(d.columns).toEqual(names);
      expect(d.rows).toBe(100);
      expect(d.kinds).toEqual([KIND.text, KIND.integer, KIND.numeric, KIND.timestamp, KIND.text]);
    });
  }

  it('reads CDATA, maps empty text and a missing field to NULL', async () => {
    const xml =
      '<?xml version="1.0" encoding="UTF-8"?><result><row><field ' +
      'name="a"><![CDATA[x<&>\ty]]></field><field name="b">1</field></row>' +
      '<row><field name="b"/></row><row><field name="b">&#228;&#x20AC;</field><field name="a"></field></row></result>';
    const d = makePageDecoder('xml_query');
    expect(parseCopyText(await decodeAll(d, [Buffer.from(xml)], 3))).toEqual([
      ['x<&>\ty', '1'],
      [null, null],
      [null, 'ä€'],
    ]);
  });

  for (const size of [65536, 'random'] as const) {
    it(`saxes: classifies a value that moved the output to a new slab by its bytes, chunks of ${size}`, async () => {
      // Rows 1-3 take the fast path and are handed out; row 4's CDATA sends the rest to saxes. Its "Nr" value is far
      // longer than the slab's room (a third of 1 MiB), so writing it moves the pending bytes to a new slab. The value
      // is text; its bytes after the first few are digits: read from where it began in the old slab, it looked numeric.
      const long = `x${'7'.repeat(400_000)}`;
      const xml =
        '<?xml version="1.0" encoding="UTF-8"?><result>' +
        [1, 2, 3].map((n) => `<row><field name="Notiz">n${n}</field><field name="Nr">${n}</field></row>`).join('') +
        `<row><field name="Notiz"><![CDATA[c]]></field><field name="Nr">${long}</field></row>` +
        '<row><field name="Notiz">n5</field><field name="Nr">5</field></row></result>';
      const d = makePageDecoder('xml_query') as XmlQueryPageDecoder;
      const rows = parseCopyText(await decodeAll(d, [Buffer.from(xml)], size, 1, 4096));
      expect(d.saxesPages).toBe(1);
      expect(rows).toEqual([
        ['n1', '1'],
        ['n2', '2'],
        ['n3', '3'],
        ['c', long],
        ['n5', '5'],
      ]);
      expect(d.kinds).toEqual([KIND.text, KIND.integer | KIND.text]);
      expect(d.kinds.map(inferColumnType)).toEqual(['text', 'text']);
    });
  }

  it('rejects a field the first row did not have, naming page and row', async () => {
    const d = makePageDecoder('xml_query');
    const bad = page(
      [
        ['1', '2'],
        ['3', '4'],
      ],
      ['a', 'b'],
    )
      .toString()
      .replace(/name="b">4/, 'name="c">4');
    const err = await decodeAll(d, [page([['1', '2']], ['a', 'b']), Buffer.from(bad)], 5).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PageFormatError);
    expect((err as PageFormatError).details).toMatchObject({ page: 2, row: 2 });
    expect((err as Error).message).toMatch(/field "c" is not among/);
  });

  it('rejects XML that is not well-formed, and a truncated page', async () => {
    await expect(
      decodeAll(makePageDecoder('xml_query'), [Buffer.from('<result><row><field name="a">x</row></result>')], 4),
    ).rejects.toThrow(/page 1, row 1: XML: /);
    const err = await decodeAll(
      makePageDecoder('xml_query'),
      [Buffer.from('<result><row><field name="a">x</field></row>')],
      64,
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PageFormatError);
    expect((err as PageFormatError).code).toBe('PAGE_FORMAT');
  });
});
