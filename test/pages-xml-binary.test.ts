/**
 * xml_query in COPY binary format (src/pages/xml-fast.ts, xml-decoder.ts): the binary rows must be exactly what the
 * column encoders make of the values the text format gives (so a load means the same in either format), from the fast
 * scanner and from saxes alike, wherever the network cuts a page — entities, character references, CDATA and the
 * hand-over to saxes included — and a value an encoder does not take is refused naming column, page and row.
 */
import { describe, expect, it } from 'vitest';
import { makePageDecoder } from '../src/pages/decoder.ts';
import type { XmlQueryPageDecoder } from '../src/pages/xml-decoder.ts';
import { BinaryFieldWriter, REFUSED } from '../src/copy-binary/field-writer.ts';
import { BinaryValueUnsupported, binaryEncodingOf, type BinaryEncoding } from '../src/copy-binary/format.ts';
import { CopyOutput } from '../src/pages/copy-text.ts';
import { reportData } from '../src/simulator/catalogue.ts';
import { renderXml } from '../src/simulator/render-xml.ts';
import { makeZonedFormatter } from '../src/simulator/time-format.ts';
import { decodeAll, parseCopyText } from './pages-support.ts';

const ZONE = 'Europe/Zurich';
const HEAD = '<?xml version="1.0" encoding="UTF-8"?>';
const f = (name: string, v: string | null): string =>
  v === null ? `<field name="${name}"/>` : `<field name="${name}">${v}</field>`;
const xmlPage = (...rows: string[]): Buffer =>
  Buffer.from(`${HEAD}<result>${rows.map((r) => `<row>${r}</row>`).join('')}</result>`);

/** A decoder planned like a direct load into a target of `types` (binary), or unplanned (text, inspecting). */
function decoder(types?: readonly string[]): XmlQueryPageDecoder {
  const d = makePageDecoder('xml_query') as XmlQueryPageDecoder;
  if (types) d.planRows(() => ({ inspect: false, binary: { encodings: encodingsOf(types), timezone: ZONE } }));
  return d;
}

function encodingsOf(types: readonly string[]): BinaryEncoding[] {
  return types.map((t) => binaryEncodingOf(t)!);
}

/** The binary rows the column encoders make of text-format rows (NULL as NULL, every other value by its encoder). */
function encodeRows(rows: (string | null)[][], types: readonly string[]): Buffer {
  const w = new BinaryFieldWriter(encodingsOf(types), ZONE);
  const out = new CopyOutput();
  for (const row of rows) {
    out.reserve(64 * row.length + 2 * Buffer.byteLength(row.join('')));
    out.pos = w.rowStart(out.buf, out.pos);
    for (const [k, v] of row.entries()) {
      if (v === null) {
        out.pos = w.writeNull(out.buf, out.pos);
        continue;
      }
      const b = Buffer.from(v, 'utf8');
      const p = w.write(out.buf, out.pos, k, b, 0, b.length);
      if (p === REFUSED) throw new Error(`the encoder of column ${k} refused ${JSON.stringify(v)}`);
      out.pos = p;
    }
  }
  return Buffer.from(out.take() ?? Buffer.alloc(0));
}

/** Decodes pages, each cut into the given chunks (byte offsets where a chunk ends), into one Buffer. */
async function decodeCut(d: XmlQueryPageDecoder, pages: Buffer[], cuts: number[]): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (const [k, page] of pages.entries()) {
    async function* body(): AsyncGenerator<Uint8Array> {
      let from = 0;
      for (const to of [...cuts.filter((c) => c > 0 && c < page.length), page.length]) {
        yield new Uint8Array(page.subarray(from, to));
        from = to;
      }
    }
    for await (const out of d.decodePage(body(), k + 1)) parts.push(Buffer.from(out));
  }
  return Buffer.concat(parts);
}

/** Cuts every `n` bytes of a page of `length` bytes. */
function every(n: number, length: number): number[] {
  return Array.from({ length: Math.ceil(length / n) }, (_v, k) => k * n);
}

const SALES_TYPES = ['bigint', 'text', 'bigint', 'numeric', 'numeric', 'timestamp with time zone', 'text', 'bigint'];

describe('xml_query in COPY binary format', () => {
  it(
    'writes what the encoders make of the text rows, for the simulator pages at ' + 'every chunk size, without saxes',
    async () => {
      const data = reportData('Sales/Orders.avw', { ROWS: '400' }, 1)!;
      const zone = makeZonedFormatter(ZONE);
      const pages = [0, 1].map((p) =>
        Buffer.from([...renderXml(data, p * 200, p * 200 + 200, { zone, page: p + 1 })].join('')),
      );
      const text = parseCopyText(await decodeAll(decoder(), pages, 65536));
      expect(text).toHaveLength(400);
      const expected = encodeRows(text, SALES_TYPES);
      for (const size of [1, 13, 'random', 65536] as const) {
        const d = decoder(SALES_TYPES);
        const parts: Buffer[] = [];
        for (const [k, page] of pages.entries()) {
          async function* chunks(): AsyncGenerator<Uint8Array> {
            for (let i = 0, r = 7; i < page.length; r = (r * 31 + 17) % 293) {
              const n = size === 'random' ? 1 + r : size;
              yield new Uint8Array(page.subarray(i, i + n));
              i += n;
            }
          }
          for await (const out of d.decodePage(chunks(), k + 1)) parts.push(Buffer.from(out));
        }
        expect({ size, equal: Buffer.concat(parts).equals(expected) }).toEqual({ size, equal: true });
        expect(d.format).toBe('binary');
        expect(d.saxesPages).toBe(0);
        expect(d.rows).toBe(400);
      }
    },
  );

  it(
    'gives the same rows in both formats wherever the network cuts a page: references, CDATA, ' +
      'the hand-over to saxes, stitched chunks',
    async () => {
      const types = ['bigint', 'text', 'numeric', 'timestamp with time zone', 'text'];
      const cols = ['Nr', 'Name &amp; Co', 'Betrag', 'Am', 'Notiz'];
      const row = (i: number, cdata = false): string => {
        const notiz = cdata
          ? '<![CDATA[roh <b>&amp;</b>]]>'
          : [
              `Zeile ${i}&#13;&#10;weiter&#9;mit Tab \\ und &lt;Klammern&gt; &quot;zitiert&quot; &apos;x&apos;`,
              `Größe 日本 😀 &#x1F600; &#8364;`,
              '',
              null,
              `x]]y] &gt;`,
              `Teil ${i}`,
            ][i % 6]!;
        // Typed values with references: digits and signs written as character references, in the fast path.
        const nr = i % 7 === 0 ? `&#49;${i}` : String(1000 + i);
        const betrag = i % 5 === 0 ? `&#x2D;${i}.50` : i % 5 === 1 ? null : `${i}.05`;
        const am = i % 4 === 0 ? `2024-03-0${1 + (i % 9)}T10:15:30.5+01:00` : `2024-10-27T0${i % 4}:30:00&#x2B;02:00`;
        return [
          f(cols[0]!, nr),
          f(cols[1]!, `Müller &amp; Söhne ${i}`),
          f(cols[2]!, betrag),
          f(cols[3]!, am),
          f(cols[4]!, notiz),
        ].join(i % 9 === 0 ? '\n  ' : '');
      };
      const same = async (
        page: Buffer,
        rows: number,
        cuts: (cut: number) => number[],
        at: Iterable<number>,
        saxes: number,
      ): Promise<void> => {
        const text = parseCopyText(await decodeCut(decoder(), [page], []));
        expect(text).toHaveLength(rows);
        const expected = encodeRows(text, types);
        const whole = decoder(types);
        expect((await decodeCut(whole, [page], [])).equals(expected)).toBe(true);
        expect(whole.saxesPages).toBe(saxes);
        for (const cut of at) {
          const gotText = parseCopyText(await decodeCut(decoder(), [page], cuts(cut)));
          const b = decoder(types);
          const gotBinary = await decodeCut(b, [page], cuts(cut));
          if (!gotBinary.equals(expected) || JSON.stringify(gotText) !== JSON.stringify(text)) {
            expect({ cut, text: gotText }).toEqual({ cut, text });
            expect({ cut, binary: gotBinary.toString('hex') }).toEqual({ cut, binary: expected.toString('hex') });
          }
          expect(b.saxesPages).toBe(saxes);
        }
      };
      const range = (from: number, to: number, step = 1): number[] =>
        Array.from({ length: Math.ceil((to - from) / step) }, (_v, k) => from + k * step);

      // The fast path alone: two chunks, the second over 8 KiB (stitched behind the first one's cut row), cut at every
      // byte of the first rows.
      const fast = xmlPage(...range(0, 70).map((i) => row(i)));
      expect(fast.length).toBeGreaterThan(10_000);
      const text = parseCopyText(await decodeCut(decoder(), [fast], []));
      expect(text[0]).toEqual([
        '10',
        'Müller & Söhne 0',
        '-0.50',
        '2024-03-01T10:15:30.5+01:00',
        'Zeile 0\r\nweiter\tmit Tab \\ und <Klammern> "zitiert" \'x\'',
      ]);
      expect(text[1]).toEqual(['1001', 'Müller & Söhne 1', null, '2024-10-27T01:30:00+02:00', 'Größe 日本 😀 😀 €']);
      await same(fast, 70, (cut) => [cut], range(1, 1600), 0);

      // The hand-over to saxes at a CDATA row: three chunks, the second of 9,000 bytes (stitched behind the first one's
      // cut row), cut at every byte around that row and every 37th byte before it, so that the row falls in the carried
      // tail, in the stitched part and after it.
      const withCdata = xmlPage(...range(0, 30).map((i) => row(i)), row(30, true), ...range(31, 75).map((i) => row(i)));
      const at = withCdata.indexOf('<![CDATA[');
      expect(withCdata.length - at).toBeGreaterThan(9000);
      await same(
        withCdata,
        75,
        (cut) => [cut, cut + 9000],
        [...range(at - 4600, at - 400, 37), ...range(at - 400, at + 400)],
        1,
      );
    },
    120_000,
  );

  it(
    'refuses a value its column encoder does not take, naming column, page and row, ' + 'in the fast path and in saxes',
    async () => {
      const ok = xmlPage(`${f('n', '1')}${f('b', '2.5')}`, `${f('n', '2')}${f('b', '3')}`);
      for (const odd of [f('b', '1e3'), f('b', '<![CDATA[1e3]]>')]) {
        const bad = xmlPage(`${f('n', '3')}${f('b', '4')}`, `${f('n', '4')}${odd}`);
        const err = await decodeCut(decoder(['bigint', 'numeric']), [ok, bad], every(64, bad.length)).catch(
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(BinaryValueUnsupported);
        expect(err).toMatchObject({ column: 1, page: 2, row: 2 });
      }
      // In text format the same page is loaded as it is: PostgreSQL reads 1e3.
      const text = parseCopyText(await decodeAll(decoder(), [ok, xmlPage(`${f('n', '3')}${f('b', '1e3')}`)], 64));
      expect(text).toEqual([
        ['1', '2.5'],
        ['2', '3'],
        ['3', '1e3'],
      ]);
    },
  );

  it('writes empty and missing values as NULL, and saxes rows (other field order) as the fast path would', async () => {
    const types = ['text', 'bigint'];
    const page = xmlPage(
      `${f('a', 'x')}${f('b', '1')}`,
      `${f('a', '')}${f('b', null)}`,
      `${f('b', '7')}${f('a', 'y')}`,
      `${f('a', 'z')}`,
      `${f('a', 'w')}${f('b', '9')}`,
    );
    const d = decoder(types);
    const got = await decodeCut(d, [page], every(5, page.length));
    expect(
      got.equals(
        encodeRows(
          [
            ['x', '1'],
            [null, null],
            ['y', '7'],
            ['z', null],
            ['w', '9'],
          ],
          types,
        ),
      ),
    ).toBe(true);
    expect(d.saxesPages).toBe(1);
  });
});
