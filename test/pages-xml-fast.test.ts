/**
 * The xml_query fast path (src/pages/xml-fast.ts): the simulator's pages and hand-written variants are decoded
 * by the byte scanner alone (saxesPages stays 0), with entities, character references, COPY escapes and UTF-8
 * split across chunks; anything outside its shape hands the rest of the page to saxes at a row boundary with
 * the same result, and errors still name page and row.
 */
import { describe, expect, it } from 'vitest';
import { makePageDecoder, KIND, PageFormatError } from '../src/pages/decoder.ts';
import type { XmlQueryPageDecoder } from '../src/pages/xml-decoder.ts';
import { reportData } from '../src/simulator/catalogue.ts';
import { renderXml } from '../src/simulator/render-xml.ts';
import { makeZonedFormatter } from '../src/simulator/time-format.ts';
import { decodeAll, parseCopyText } from './pages-support.ts';

const xmlDecoder = (): XmlQueryPageDecoder => makePageDecoder('xml_query') as XmlQueryPageDecoder;
const HEAD = '<?xml version="1.0" encoding="UTF-8"?>';
const f = (name: string, v: string | null): string =>
  v === null ? `<field name="${name}"/>` : `<field name="${name}">${v}</field>`;
const xmlPage = (...rows: string[]): Buffer =>
  Buffer.from(`${HEAD}<result>${rows.map((r) => `<row>${r}</row>`).join('')}</result>`);

describe('xml_query fast path', () => {
  it('decodes the simulator pages without saxes, equal to the served rows, at every chunk size', async () => {
    const data = reportData('Sales/Orders.avw', { ROWS: '400' }, 1)!;
    const zone = makeZonedFormatter('Europe/Zurich');
    const pages = [0, 1].map((p) =>
      Buffer.from([...renderXml(data, p * 200, p * 200 + 200, { zone, page: p + 1 })].join('')),
    );
    const expected = Array.from({ length: 400 }, (_v, i) => data.row(i).map((v) => (v === '' ? null : v)));
    for (const size of [1, 13, 'random', 65536] as const) {
      const d = xmlDecoder();
      const rows = parseCopyText(await decodeAll(d, pages, size));
      expect(d.saxesPages).toBe(0);
      expect(d.rows).toBe(400);
      expect(d.columns).toEqual(data.columns.map((c) => c.name));
      // Timestamps arrive as ISO text with offset; compare them as instants.
      const ts = data.columns.findIndex((c) => c.kind === 'timestamp');
      expect(rows.map((r) => r.map((v, k) => (k === ts && v !== null ? new Date(v).toISOString() : v)))).toEqual(
        expected,
      );
      expect(d.kinds[0]).toBe(KIND.integer);
      expect(d.kinds[ts]).toBe(KIND.timestamp);
    }
  });

  it('decodes entities, character references, escapes and whitespace between elements in the fast path', async () => {
    const page = Buffer.from(
      `\uFEFF${HEAD}\n<result>\n  <row>\n    ${f('a &amp; b', 'x &lt;&gt;&amp;&quot;&apos; y')}\n    ` +
        `${f('n', '&#13;&#10;&#9;&#92;&#x20AC;&#128512;')}\n  </row>\n` +
        `  <row>${f('a &amp; b', 'tab\there\\ and\nline')}${f('n', null)}</row>\n  ` +
        `<row>${f('a &amp; b', '')}${f('n', 'Größe 日本 😀')}</row>\n</result>\n`,
    );
    for (const size of [1, 5, 'random'] as const) {
      const d = xmlDecoder();
      expect(parseCopyText(await decodeAll(d, [page], size))).toEqual([
        ['x <>&"\' y', '\r\n\t\\€😀'],
        ['tab\there\\ and\nline', null],
        [null, 'Größe 日本 😀'],
      ]);
      expect(d.columns).toEqual(['a & b', 'n']);
      expect(d.saxesPages).toBe(0);
    }
  });

  it(
    'hands the rest of a page to saxes at a row boundary (CDATA, comment, ' + 'other order, raw CR), same rows',
    async () => {
      const odd = [
        `${f('a', '<![CDATA[c<d]]>')}${f('b', '2')}`,
        `<!-- note -->${f('a', 'c&lt;d')}${f('b', '2')}`,
        `${f('b', '2')}${f('a', 'c&lt;d')}`,
        `${f('a', 'c\r\nd')}${f('b', '2')}`,
      ];
      const want = [
        ['c<d', '2'],
        ['c<d', '2'],
        ['c<d', '2'],
        ['c\nd', '2'],
      ];
      for (const [k, o] of odd.entries()) {
        const d = xmlDecoder();
        const page = xmlPage(`${f('a', '1')}${f('b', '1')}`, o, `${f('a', '3')}${f('b', '3')}`);
        const rows = parseCopyText(await decodeAll(d, [page, page], 'random', k));
        const one = [['1', '1'], want[k]!, ['3', '3']];
        expect(rows).toEqual([...one, ...one]);
        expect(d.rows).toBe(6);
        expect(d.saxesPages).toBe(2);
      }
    },
  );

  it(
    'keeps errors exact after the hand-over: unknown field, trailing content, truncation, ' +
      'invalid UTF-8 as saxes reads it',
    async () => {
      const good = xmlPage(`${f('a', '1')}${f('b', '1')}`, `${f('a', '2')}${f('b', '2')}`);
      const bad = xmlPage(
        `${f('a', '1')}${f('b', '1')}`,
        `${f('a', '2')}${f('b', '2')}`,
        `${f('a', '3')}${f('c', '3')}`,
      );
      const err = await decodeAll(xmlDecoder(), [good, bad], 7).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PageFormatError);
      expect((err as PageFormatError).details).toMatchObject({ page: 2, row: 3 });
      expect((err as Error).message).toMatch(/field "c" is not among/);

      await expect(decodeAll(xmlDecoder(), [Buffer.concat([good, Buffer.from('<row/>')])], 64)).rejects.toThrow(
        PageFormatError,
      );
      await expect(decodeAll(xmlDecoder(), [good.subarray(0, good.length - 3)], 64)).rejects.toThrow(PageFormatError);
      await expect(decodeAll(xmlDecoder(), [xmlPage(`${f('a', 'x]]>y')}`)], 64)).rejects.toThrow(/]]>/);
      const brackets = xmlDecoder();
      expect(parseCopyText(await decodeAll(brackets, [xmlPage(`${f('a', 'x]]y] >')}`)], 3))).toEqual([['x]]y] >']]);
      expect(brackets.saxesPages).toBe(0);

      const d = xmlDecoder();
      const latin1 = Buffer.concat([
        Buffer.from(`${HEAD}<result><row>${f('a', 'x')}</row><row><field name="a">M`),
        Buffer.from([0xfc]),
        Buffer.from('ller</field></row></result>'),
      ]);
      expect(parseCopyText(await decodeAll(d, [latin1], 'random'))).toEqual([['x'], ['M\uFFFDller']]);
      expect(d.saxesPages).toBe(1);
    },
  );
});
