/**
 * C/Java string decoding (pages/cstr.ts) and the txt_cstr / txt_allcstr decoders at the page level: every escape
 * of the issue, surrogate pairs, byte escapes as UTF-8, the errors, and chunk boundaries anywhere in a page.
 */
import { describe, expect, it } from 'vitest';
import { CstrError, decodeCstr } from '../src/pages/cstr.ts';
import { makePageDecoder } from '../src/pages/decoder.ts';
import { PageFormatError } from '../src/pages/errors.ts';
import { encodeCstr } from '../src/simulator/cstr-encode.ts';
import { decodeAll, parseCopyText } from './pages-support.ts';

function decode(coded: string): string {
  const b = Buffer.from(coded, 'utf8');
  const out = Buffer.alloc(b.length);
  const r = decodeCstr(b, 0, b.length, out, 0);
  return out.toString('utf8', 0, r.end);
}

describe('decodeCstr', () => {
  it('decodes every C and Java escape', () => {
    expect(decode(String.raw`a\\b\"c\'d\ne\rf\tg\bh\fi\vj\ak\?`)).toBe('a\\b"c\'d\ne\rf\tg\bh\fi\vj\u0007k?');
    expect(decode(String.raw`\101\60\7x\377`.replace('\\377', ''))).toBe('A0\u0007x');
    expect(decode(String.raw`\x41\x7e`)).toBe('A~');
    expect(decode(String.raw`\u00e4\u00DF\u20AC`)).toBe('äß€');
  });

  it('joins surrogate pairs into one code point (emoji with skin tone: two pairs)', () => {
    expect(decode(String.raw`\uD83D\uDE80 \uD83D\uDC4D\uD83C\uDFFD`)).toBe('🚀 👍🏽');
  });

  it('takes octal and \\x escapes as bytes, so escaped UTF-8 becomes the character', () => {
    expect(decode(String.raw`\xC3\xA4 \303\266`)).toBe('ä ö');
  });

  it('passes unescaped UTF-8 through', () => {
    expect(decode('Müller 日本 🚀')).toBe('Müller 日本 🚀');
  });

  it("is the inverse of the simulator's coding for any text", () => {
    const texts = [
      '',
      'plain',
      'Zahlung per Überweisung\r\nfällig',
      'Tab\there',
      'Back\\slash "quoted"',
      '🚀👍🏽',
      '\u0000\u0001\u007f',
      'ÄÖÜ äöü ß € 日本商事',
    ];
    for (const t of texts) {
      const coded = encodeCstr(t);
      expect(coded).toMatch(/^[\x20-\x7e]*$/);
      expect(decode(coded)).toBe(t);
    }
  });

  it('refuses what is not a C/Java string, saying where', () => {
    const fails = (coded: string): CstrError => {
      try {
        decode(coded);
      } catch (e) {
        return e as CstrError;
      }
      throw new Error(`decoded ${coded}`);
    };
    expect(fails(String.raw`ab\q`)).toMatchObject({ message: 'unknown escape \\q', index: 2 });
    expect(fails('ab\\')).toMatchObject({ message: 'backslash at the end of a value', index: 2 });
    expect(fails(String.raw`\x4`).message).toBe('\\x needs two hex digits');
    expect(fails(String.raw`\u12G4`).message).toBe('\\u needs four hex digits');
    expect(fails(String.raw`\uD83D x`).message).toBe('high surrogate \\uD83D without a low surrogate after it');
    expect(fails(String.raw`\uDE80`).message).toBe('low surrogate \\uDE80 without a high surrogate before it');
    expect(fails(String.raw`\777`).message).toBe('octal escape \\777 is beyond \\377');
  });
});

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

describe('txt_cstr pages', () => {
  const page = Buffer.concat([
    BOM,
    Buffer.from(
      [
        String.raw`"Nr","Kunde \"A\"","Betrag","Am"`,
        String.raw`1,"M\u00FCller\r\nAG\t\\",12.50,01.02.2024 10:11:12.123`,
        String.raw`2,"\uD83D\uDE80",,`,
        String.raw`3,"",-1,`,
        '',
      ].join('\r\n'),
    ),
  ]);

  it.each([1, 2, 3, 7, 'random'] as const)('decodes values exactly, whatever the chunk size (%s)', async (size) => {
    const d = makePageDecoder('txt_cstr');
    const rows = parseCopyText(await decodeAll(d, [page, page], size));
    expect(d.columns).toEqual(['Nr', 'Kunde "A"', 'Betrag', 'Am']);
    const one = [
      ['1', 'Müller\r\nAG\t\\', '12.50', '01.02.2024 10:11:12.123'],
      ['2', '🚀', null, null],
      ['3', '', '-1', null],
    ];
    expect(rows).toEqual([...one, ...one]);
    expect(d.rows).toBe(6);
  });

  it('refuses a NUL character and escaped bytes that are not UTF-8', async () => {
    const bad = async (line: string): Promise<PageFormatError> => {
      const d = makePageDecoder('txt_cstr');
      const p = Buffer.from(`"A"\r\n${line}\r\n`);
      return decodeAll(d, [p], 1).then(
        () => {
          throw new Error('decoded');
        },
        (e: unknown) => e as PageFormatError,
      );
    };
    expect((await bad(String.raw`"a\0b"`)).message).toBe(
      'page 1, row 1, byte offset 6: column "A": the value holds a NUL character (\\0), ' +
        'which PostgreSQL text cannot store',
    );
    expect((await bad(String.raw`"\xE4"`)).message).toBe(
      'page 1, row 1, byte offset 6: column "A": the octal or \\x escapes of the value do not form UTF-8 text',
    );
  });
});

describe('txt_all / txt_allcstr pages', () => {
  it('loads each line as page, line and the fields array, quotes removed', async () => {
    const csv = Buffer.from(
      ['"Bericht","Seite",1', '"Gruppe",1', '1,"a ""q"" b",,"x\\y"', '', '"multi', 'line",2', ''].join('\r\n'),
    );
    const d = makePageDecoder('txt_all');
    const rows = parseCopyText(await decodeAll(d, [csv], 'random'));
    expect(rows).toEqual([
      ['1', '1', '{"Bericht","Seite","1"}'],
      ['1', '2', '{"Gruppe","1"}'],
      ['1', '3', '{"1","a \\"q\\" b",NULL,"x\\\\y"}'],
      ['1', '4', '{}'],
      ['1', '5', '{"multi\r\nline","2"}'],
    ]);
    const cstr = Buffer.from(
      [String.raw`"Gr\u00FCppe \"1\"",1`, String.raw`"tab\there","back\\slash"`, ''].join('\r\n'),
    );
    const c = makePageDecoder('txt_allcstr');
    expect(parseCopyText(await decodeAll(c, [cstr], 1))).toEqual([
      ['1', '1', '{"Grüppe \\"1\\"","1"}'],
      ['1', '2', '{"tab\there","back\\\\slash"}'],
    ]);
  });
});

describe('records cut off by network chunks of any size', () => {
  // Chunks past 8 KiB behind a short cut-off record are stitched (the record completed from the chunk's first 4 KiB,
  // the rest parsed in place); a page with a byte order mark, escapes, quotes and line breaks inside quotes.
  const lines = ['\ufeff"Nr","Text","Betrag"'];
  for (let k = 0; k < 3000; k++) {
    const text = k % 7 === 0 ? String.raw`tab\there \"q\" \u00FC` : `text ${'x'.repeat(k % 50)}`;
    lines.push(`${k},"${text}",${(k * 1.25).toFixed(2)}`);
  }
  const cstrPage = Buffer.from(`${lines.join('\r\n')}\r\n`);
  // txt_all is CSV: a quote inside quotes is doubled, a backslash is just a byte.
  const allPage = Buffer.from(`${lines.map((l) => l.replaceAll('\\"', '""')).join('\r\n')}\r\n"multi\r\nline",1\r\n`);
  it.each([
    ['txt_cstr', cstrPage],
    ['txt_allcstr', cstrPage],
    ['txt_all', allPage],
  ] as const)('%s: the same rows whatever the chunks', async (type, page) => {
    const whole = await decodeAll(makePageDecoder(type), [page], page.length);
    expect(parseCopyText(whole).length).toBeGreaterThanOrEqual(3000);
    for (const [size, seed, max] of [
      [8193, 1, 0],
      [9000, 1, 0],
      [65_537, 1, 0],
      ['random', 3, 30_000],
      ['random', 4, 12_000],
      ['random', 5, 70_000],
    ] as const) {
      const got = await decodeAll(makePageDecoder(type), [page], size, seed, max || 300);
      expect({ size, seed, same: got.equals(whole) }).toEqual({ size, seed, same: true });
    }
  });
});

describe('report.maxValueBytes', () => {
  it.each(['txt_cstr', 'txt_allcstr', 'txt_all', 'json_userdef'] as const)(
    '%s: a record (or json_userdef page) past the limit fails the page, memory bounded',
    async (type) => {
      const big = Buffer.concat([Buffer.from('"A"\r\n"'), Buffer.alloc(5000, 0x61), Buffer.from('"\r\n')]);
      const d = makePageDecoder(type, { maxValueBytes: 1000 });
      const err = (await decodeAll(d, [big], 256).catch((e: unknown) => e)) as { code: string; message: string };
      expect(err.code).toBe('VALUE_TOO_LARGE');
      expect(err.message).toMatch(/^page 1, row \d+: a value larger than maxValueBytes \(1000 bytes;/);
    },
  );

  it.each(['txt_cstr', 'txt_allcstr', 'txt_all'] as const)(
    '%s: a record past the limit fails holding at most the limit and one chunk, whatever the chunks',
    async (type) => {
      const big = Buffer.concat([Buffer.from('"A"\r\n"'), Buffer.alloc(1_000_000, 0x61), Buffer.from('"\r\n')]);
      for (const size of [1000, 9000, 65_536]) {
        const d = makePageDecoder(type, { maxValueBytes: 100_000 });
        const err = (await decodeAll(d, [big], size).catch((e: unknown) => e)) as {
          code: string;
          details: { bytes: number };
        };
        expect({ size, code: err.code }).toEqual({ size, code: 'VALUE_TOO_LARGE' });
        expect(err.details.bytes, `chunks of ${size}`).toBeLessThanOrEqual(100_000 + size);
      }
    },
  );
});
