/**
 * txt decoder (src/pages/txt-decoder.ts): differential test against csv-parse over generated pages with
 * nasty values, fed in chunks of 1, 7, random and 64 KiB bytes; header checks, field counts, kinds, BOMs.
 */
import { describe, expect, it } from 'vitest';
import { parse as parseCsv } from 'csv-parse/sync';
import { makePageDecoder, KIND, PageFormatError } from '../src/pages/decoder.ts';
import { decodeAll, parsePgCsv, rng } from './pages-support.ts';

const HEADER = ['Kunde', 'Menge Stk', 'Betrag', 'Erfasst am', 'Beleg ID', '"Notiz", lang'];
const TEXTS = [
  'Müller AG',
  'Bäckerei "Zum Löwen"',
  'a,b,c',
  'Zeile 1\r\nZeile 2',
  'nur\nLF',
  '日本商事',
  '€ 12,50',
  'Tab\there',
  'back\\slash',
  '',
  '"',
  '""',
  ' lead',
  'x\r\ny\r\n',
];

type Cell = { raw: string; value: string | null };

function cell(r: () => number, col: number): Cell {
  const pick = r();
  if (pick < 0.12) return { raw: '', value: null };
  if (col === 0 || col === 5) {
    const t = TEXTS[Math.floor(r() * TEXTS.length)]!;
    return { raw: `"${t.replaceAll('"', '""')}"`, value: t };
  }
  if (col === 1) {
    const v = String(Math.floor(r() * 2000) - 1000);
    return { raw: v, value: v };
  }
  if (col === 2) {
    const v = r() < 0.5 ? '-12.50' : r() < 0.5 ? '0.10' : `${Math.floor(r() * 1e6)}.${Math.floor(r() * 90 + 10)}`;
    return { raw: v, value: v };
  }
  if (col === 3) {
    const v =
      `0${1 + Math.floor(r() * 9)}.1${Math.floor(r() * 3)}.2024 ` +
      `1${Math.floor(r() * 10)}:3${Math.floor(r() * 10)}:5${Math.floor(r() * 10)}.${Math.floor(r() * 900 + 100)}`;
    return { raw: v, value: v };
  }
  const v = r() < 0.5 ? '9007199254740993' : '92233720368547758070';
  return { raw: v, value: v };
}

/** A page: BOM, header, rows; returns the bytes and the expected values. */
function page(
  seed: number,
  rows: number,
  opts: { eol?: string; bom?: number[]; quotedHeader?: boolean } = {},
): { bytes: Buffer; values: (string | null)[][] } {
  const r = rng(seed);
  const eol = opts.eol ?? '\r\n';
  const values: (string | null)[][] = [];
  const lines = [
    HEADER.map((h) => (opts.quotedHeader === false && !/[",]/.test(h) ? h : `"${h.replaceAll('"', '""')}"`)).join(','),
  ];
  for (let i = 0; i < rows; i++) {
    const cells = HEADER.map((_h, col) => cell(r, col));
    values.push(cells.map((c) => c.value));
    lines.push(cells.map((c) => c.raw).join(','));
  }
  const text = lines.join(eol) + eol;
  return { bytes: Buffer.concat([Buffer.from(opts.bom ?? [0xef, 0xbb, 0xbf]), Buffer.from(text)]), values };
}

describe('txt decoder', () => {
  // 9001 and 16384: a record cut off by a chunk is completed from a stitched copy of the next chunk's start (carry.ts).
  for (const size of [1, 7, 'random', 9001, 16384, 65536] as const) {
    it(`passes rows through as PostgreSQL CSV, chunks of ${size} bytes, agreeing with csv-parse`, async () => {
      const pages = [page(1, 600), page(2, 400, { quotedHeader: false }), page(3, 1)];
      const d = makePageDecoder('txt');
      expect(d.copyFormat).toBe('csv');
      const out = await decodeAll(
        d,
        pages.map((p) => p.bytes),
        size,
      );
      const decoded = parsePgCsv(out);
      expect(decoded).toEqual(pages.flatMap((p) => p.values));
      // Oracle: csv-parse on the raw page, header and BOM dropped.
      const oracle = pages.flatMap((p) =>
        (
          parseCsv(p.bytes.subarray(3), {
            record_delimiter: '\r\n',
            cast: (v: string, ctx: { quoting: boolean }) => (ctx.quoting ? v : v === '' ? null : v),
          }) as (string | null)[][]
        ).slice(1),
      );
      expect(decoded).toEqual(oracle);
      expect(d.rows).toBe(1001);
      expect(d.columns).toEqual(HEADER);
      // No \r\n record ends remain outside quotes: every \r in the output is inside quoted text.
      expect(out.toString('utf8').split('\r').length - 1).toBe(
        pages.reduce((s, p) => s + p.values.flat().join('').split('\r').length - 1, 0),
      );
    });
  }

  it(
    'classifies fields into kinds: quoted -> text, bare numbers, big ints, ' + 'timestamps; NULLs add nothing',
    async () => {
      const d = makePageDecoder('txt');
      await decodeAll(d, [page(4, 300).bytes], 'random');
      expect(d.kinds).toEqual([
        KIND.text,
        KIND.integer,
        KIND.numeric,
        KIND.timestamp,
        KIND.integer | KIND.numeric,
        KIND.text,
      ]);
      const bare = Buffer.from(
        '\uFEFFa,b,c,d\r\n-0,abc,01.02.2024 10:11:12,\r\n9223372036854775807,1e5,-9223372036854775808,\r\n',
      );
      const d2 = makePageDecoder('txt');
      await decodeAll(d2, [bare], 3);
      expect(d2.kinds).toEqual([KIND.integer, KIND.text | KIND.numeric, KIND.timestamp | KIND.integer, 0]);
    },
  );

  it('skips classification when inspect is off, rows unchanged', async () => {
    const d = makePageDecoder('txt');
    d.planRows(() => ({ inspect: false }));
    const p = page(5, 50);
    expect(parsePgCsv(await decodeAll(d, [p.bytes], 7))).toEqual(p.values);
    expect(d.kinds).toEqual(HEADER.map(() => 0));
  });

  it('yields zero-copy views for LF pages and accepts a last line without line end', async () => {
    const p = page(6, 40, { eol: '\n' });
    const trimmed = p.bytes.subarray(0, p.bytes.length - 1);
    const d = makePageDecoder('txt');
    const out = await decodeAll(d, [trimmed], 65536);
    expect(parsePgCsv(out)).toEqual(p.values);
    // One chunk, no CR: the output is the input minus BOM and header.
    const headerEnd = p.bytes.indexOf(0x0a) + 1;
    expect(out.equals(Buffer.concat([p.bytes.subarray(headerEnd)]))).toBe(true);
  });

  for (const bom of [
    [0xef, 0xbb, 0xbf],
    [0xff, 0xfe],
    [0xfe, 0xff],
    [0x00, 0x00, 0xfe, 0xff],
    [0xff, 0xfe, 0x00, 0x00],
    [],
  ]) {
    it(
      `strips the BOM ${Buffer.from(bom).toString('hex') || '(none)'} even when ` + `split over 1-byte chunks`,
      async () => {
        const p = page(7, 5, { bom });
        for (const size of [1, 2, 3, 65536]) {
          const d = makePageDecoder('txt');
          expect(parsePgCsv(await decodeAll(d, [p.bytes, p.bytes], size))).toEqual([...p.values, ...p.values]);
          expect(d.columns).toEqual(HEADER);
        }
      },
    );
  }

  it('rejects a header that differs from page 1, naming the page', async () => {
    const good = page(8, 3).bytes;
    const bad = Buffer.from('\uFEFF"Kunde","Menge"\r\n"x",1\r\n');
    const d = makePageDecoder('txt');
    const err = await decodeAll(d, [good, good, bad], 5).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PageFormatError);
    expect((err as PageFormatError).code).toBe('PAGE_FORMAT');
    expect((err as PageFormatError).retryable).toBe(false);
    expect((err as PageFormatError).details).toMatchObject({ page: 3 });
    expect((err as Error).message).toMatch(/^page 3.*header/);
  });

  it('rejects a row with the wrong field count, naming page and row', async () => {
    const bad = Buffer.from('\uFEFFa,b\r\n1,2\r\n"x,y",2\r\n1,2,3\r\n');
    const err = await decodeAll(makePageDecoder('txt'), [bad], 4).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PageFormatError);
    expect((err as PageFormatError).details).toMatchObject({ page: 1, row: 3 });
    expect((err as Error).message).toMatch(/3 fields, the header has 2/);
  });

  it('rejects a page that ends inside quotes and a stray quote in a bare field', async () => {
    const open = Buffer.from('\uFEFFa,b\r\n1,"abc\r\n');
    await expect(decodeAll(makePageDecoder('txt'), [open], 2)).rejects.toThrow(
      /page 1, row 1.*ends inside a quoted field/,
    );
    const stray = Buffer.from('\uFEFFa,b\r\n1,ab"c\r\n');
    await expect(decodeAll(makePageDecoder('txt'), [stray], 64)).rejects.toThrow(
      /row 1.*quote inside an unquoted field/,
    );
  });

  it('gives no rows and no columns for an empty page or a BOM-only page', async () => {
    const d = makePageDecoder('txt');
    expect((await decodeAll(d, [Buffer.alloc(0), Buffer.from([0xef, 0xbb, 0xbf])], 1)).length).toBe(0);
    expect(d.columns).toBeUndefined();
    expect(d.rows).toBe(0);
  });
});
