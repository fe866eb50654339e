/**
 * json / json_compact decoder (src/pages/json-decoder.ts): exact values through a COPY text-format reader,
 * chunk boundaries (escapes, UTF-8, numbers split), key order, kinds, errors with offsets, flat memory.
 */
import { describe, expect, it } from 'vitest';
import { makePageDecoder, KIND, PageFormatError } from '../src/pages/decoder.ts';
import { decodeAll, parseCopyText, rng } from './pages-support.ts';

const COLS = ['Kunde', 'Menge', 'Betrag', 'Erfasst am', 'Aktiv', 'Extra', 'Beleg ID', 'Notiz'];
const TEXTS = [
  'Müller AG',
  'Bäckerei "Zum Löwen"',
  'a,b',
  'Zeile 1\r\nZeile 2',
  '日本商事 😀',
  '€ 12,50',
  'Tab\there',
  'back\\slash',
  '',
  'slash/ok',
  '\u0001ctl',
];

/** A value as JSON source text and as the expected loaded value. */
type V = { json: string; value: string | null };

function str(s: string, r: () => number): string {
  // Mix plain JSON.stringify with \u escapes and \/ so every escape form crosses chunk boundaries.
  if (r() < 0.5) return JSON.stringify(s);
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === '/') out += '\\/';
    else if (cp > 0x7f || cp < 0x20 || ch === '"' || ch === '\\') {
      out +=
        ch.length === 2
          ? `\\u${ch.charCodeAt(0).toString(16)}\\u${ch.charCodeAt(1).toString(16).toUpperCase()}`
          : `\\u${cp.toString(16).padStart(4, '0')}`;
    } else out += ch;
  }
  return `${out}"`;
}

function value(col: number, r: () => number): V {
  if (r() < 0.1) return { json: 'null', value: null };
  const t = TEXTS[Math.floor(r() * TEXTS.length)]!;
  switch (col) {
    case 0:
    case 7:
      return { json: str(t, r), value: t };
    case 1: {
      const v = ['0', '-0', '42', '-17', '9007199254740993'][Math.floor(r() * 5)]!;
      return { json: v, value: v };
    }
    case 2: {
      const v = ['0.10', '-12.50', '1e5', '2.5E-3', '123456.789'][Math.floor(r() * 5)]!;
      return { json: v, value: v };
    }
    case 3: {
      const v = ['2024-03-01T12:34:56.789+01:00', '2024-03-01T11:34:56.789Z', '2023-12-31T23:59:59-05:00'][
        Math.floor(r() * 3)
      ]!;
      return { json: JSON.stringify(v), value: v };
    }
    case 4:
      return r() < 0.5 ? { json: 'true', value: 'true' } : { json: 'false', value: 'false' };
    case 5: {
      const v = { k: [1, 'ä\\"\n', null], n: { x: true } };
      return { json: JSON.stringify(v, null, r() < 0.5 ? 2 : 0), value: JSON.stringify(v, null, 0) };
    }
    default: {
      const v = r() < 0.5 ? '9223372036854775807' : '9223372036854775808';
      return { json: v, value: v };
    }
  }
}

/** A page of `rows` rows; later rows may reorder or drop keys. */
function page(
  seed: number,
  rows: number,
  pretty: boolean,
  shuffle = false,
): { bytes: Buffer; values: (string | null)[][] } {
  const r = rng(seed);
  const values: (string | null)[][] = [];
  const rowTexts: string[] = [];
  for (let i = 0; i < rows; i++) {
    const vs = COLS.map((_c, k) => value(k, r));
    let order = COLS.map((_c, k) => k);
    if (shuffle && i > 0 && r() < 0.3) order = order.sort(() => r() - 0.5);
    if (shuffle && i > 0 && r() < 0.2) order = order.filter((k) => k !== 2);
    const expected = COLS.map((_c, k) => (order.includes(k) ? vs[k]!.value : null));
    values.push(expected);
    const members = order.map((k) => `${JSON.stringify(COLS[k])}:${pretty ? ' ' : ''}${vs[k]!.json}`);
    rowTexts.push(pretty ? `    {\n      ${members.join(',\n      ')}\n    }` : `{${members.join(',')}}`);
  }
  const text = pretty ? `{\n  "data": [\n${rowTexts.join(',\n')}\n  ]\n}\n` : `{"data":[${rowTexts.join(',')}]}`;
  return { bytes: Buffer.from(text), values };
}

/** Copies `text` with its nested JSON members compacted, as the decoder keeps nested JSON text as sent. */
function compactNested(rows: (string | null)[][]): (string | null)[][] {
  return rows.map((row) => row.map((v, k) => (k === 5 && v !== null ? JSON.stringify(JSON.parse(v)) : v)));
}

describe('json decoder', () => {
  for (const pretty of [true, false]) {
    // 9001 and 16384: a row cut off by a chunk is completed from a stitched copy of the next chunk's start (carry.ts).
    for (const size of [1, 7, 'random', 9001, 16384, 65536] as const) {
      it(`${pretty ? 'json' : 'json_compact'}: exact values, chunks of ${size} bytes`, async () => {
        const pages = [page(11, 60, pretty), page(12, 40, pretty, true), page(13, 1, pretty)];
        const d = makePageDecoder(pretty ? 'json' : 'json_compact');
        expect(d.copyFormat).toBe('text');
        const out = await decodeAll(
          d,
          pages.map((p) => p.bytes),
          size,
          3,
        );
        expect(compactNested(parseCopyText(out))).toEqual(pages.flatMap((p) => p.values));
        expect(d.columns).toEqual(COLS);
        expect(d.rows).toBe(101);
        expect(d.kinds).toEqual([
          KIND.text,
          KIND.integer,
          KIND.numeric,
          KIND.timestamp,
          KIND.boolean,
          KIND.json,
          KIND.integer | KIND.numeric,
          KIND.text,
        ]);
      });
    }
  }

  it('loads nested JSON as its text, COPY-escaped, and keeps raw bytes of numbers', async () => {
    const p = Buffer.from(
      '{"data":[{"a":{"x":"t\\\\ab\\n"},"b":-0.000,"c":1E+2,"d":"\\u00e4\\u20ac\\ud83d\\ude00\\t"}]}',
    );
    const d = makePageDecoder('json_compact');
    const out = await decodeAll(d, [p], 1);
    expect(out.toString()).toBe('{"x":"t\\\\\\\\ab\\\\n"}\t-0.000\t1E+2\täx€😀\\t\n'.replace('x€', '€'));
    expect(parseCopyText(out)).toEqual([['{"x":"t\\\\ab\\n"}', '-0.000', '1E+2', 'ä€😀\t']]);
  });

  it('maps an empty data array to no rows and takes the columns from the first non-empty page', async () => {
    const d = makePageDecoder('json');
    expect((await decodeAll(d, [Buffer.from('{"data":[]}'), Buffer.from(' { "data" : [ ] } ')], 1)).length).toBe(0);
    expect(d.columns).toBeUndefined();
    const out = await decodeAll(d, [Buffer.from('{"data":[{"b":1,"a":"x"},{"a":"y"}]}')], 5);
    expect(d.columns).toEqual(['b', 'a']);
    expect(parseCopyText(out)).toEqual([
      ['1', 'x'],
      [null, 'y'],
    ]);
  });

  it(
    'reads rows whose whitespace or key order differs from the rows the bytes before ' + 'each value were learned from',
    async () => {
      const rows = [
        '{\n    "a" : 1,\n    "bb" : "x",\n    "c" : null\n  }',
        '{\n    "a" : 2,\n    "bb" : "y",\n    "c" : 3\n  }',
        // More whitespace after a colon than the learned rows had, then none at all, then another key order.
        '{\n    "a" :  4,\n    "bb" :\t"z",\n    "c" : 5\n  }',
        '{"a":6,"bb":"w","c":7}',
        '{\n    "bb" : "v",\n    "a" : 8\n  }',
        '{\n    "a" : 9,\n    "bb" : "u",\n    "c" : 10 }',
      ];
      const p = Buffer.from(`{\n  "data" : [ ${rows.join(', ')} ]\n}`);
      const one = [
        ['1', 'x', null],
        ['2', 'y', '3'],
        ['4', 'z', '5'],
        ['6', 'w', '7'],
        ['8', 'v', null],
        ['9', 'u', '10'],
      ];
      for (const size of [1, 7, 65536]) {
        const d = makePageDecoder('json');
        expect(parseCopyText(await decodeAll(d, [p, p], size))).toEqual([...one, ...one]);
      }
    },
  );

  it('skips timestamp checks when inspect is off and leaves kinds at 0', async () => {
    const p = page(14, 30, false);
    const d = makePageDecoder('json_compact');
    d.planRows(() => ({ inspect: false }));
    expect(compactNested(parseCopyText(await decodeAll(d, [p.bytes], 'random')))).toEqual(p.values);
    expect(d.kinds.every((k) => k === 0)).toBe(true);
  });

  const bad: [string, string, RegExp, Record<string, unknown>][] = [
    ['syntax error', '{"data":[{"a":1},{"a":1,}]}', /JSON: expected a column name/, { page: 2, row: 2, offset: 24 }],
    [
      'unknown key',
      '{"data":[{"a":1},{"a":2,"zz":3}]}',
      /column "zz" is not among the first row's columns/,
      { page: 2, row: 2 },
    ],
    ['\\u0000', '{"data":[{"a":"x\\u0000"}]}', /cannot hold NUL/, { page: 2, row: 1, offset: 16 }],
    ['truncated page', '{"data":[{"a":1},{"a":', /ends/, { page: 2 }],
    ['bad number', '{"data":[{"a":01}]}', /expected ','/, { page: 2, row: 1, offset: 15 }],
    ['not an object', '[1,2]', /must be an object/, { page: 2, offset: 0 }],
    ['trailing data', '{"data":[]} x', /after the end/, { page: 2, offset: 12 }],
  ];
  for (const [what, text, message, details] of bad) {
    it(`rejects ${what} with page, row and offset`, async () => {
      for (const size of [1, 4, 65536]) {
        const d = makePageDecoder('json_compact');
        const err = await decodeAll(d, [Buffer.from('{"data":[{"a":0}]}'), Buffer.from(text)], size).catch(
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(PageFormatError);
        expect((err as PageFormatError).code).toBe('PAGE_FORMAT');
        expect((err as Error).message).toMatch(message);
        expect((err as PageFormatError).details).toMatchObject(details);
      }
    });
  }

  it('decodes a ~200 MB page streamed from a generator in bounded memory', async () => {
    const row = Buffer.from(
      '{"Kunde": "Bäckerei \\"Zum Löwen\\", Zürich", "Menge": 12, "Betrag": -12.50, "Erfasst am": ' +
        '"2024-03-01T12:34:56.789+01:00", "Notiz": null, "Text": "' +
        'x'.repeat(120) +
        '"},\n',
    );
    const rowsPerChunk = Math.floor(65536 / row.length);
    const chunk = Buffer.concat(Array.from({ length: rowsPerChunk }, () => row));
    const chunks = Math.ceil(200e6 / chunk.length);
    async function* body(): AsyncGenerator<Uint8Array> {
      yield Buffer.from('{"data":[\n');
      for (let c = 0; c < chunks; c++) yield Buffer.from(chunk); // fresh chunks, as from a socket
      yield Buffer.from(row.subarray(0, row.length - 2));
      yield Buffer.from('\n]}');
    }
    const d = makePageDecoder('json');
    globalThis.gc?.();
    const rss0 = process.memoryUsage().rss;
    let maxRss = rss0;
    let bytes = 0;
    let n = 0;
    for await (const out of d.decodePage(body(), 1)) {
      bytes += out.length;
      if (++n % 256 === 0) maxRss = Math.max(maxRss, process.memoryUsage().rss);
    }
    expect(d.rows).toBe(chunks * rowsPerChunk + 1);
    expect(bytes).toBeGreaterThan(100e6);
    expect(maxRss - rss0).toBeLessThan(100e6);
  });
});
