/**
 * One enormous value in a page: above maxValueBytes every
 * decoder refuses the page with VALUE_TOO_LARGE naming page, row and column, having held at most about the limit,
 * not the value. The value is generated chunk by chunk, so the test itself never holds it either.
 */
import { describe, expect, it } from 'vitest';
import { makePageDecoder, type PageDecoder } from '../src/pages/decoder.ts';
import type { EtlError } from '../src/errors.ts';

const LIMIT = 1024 * 1024;
const CHUNK = 64 * 1024;

/** head, then `bytes` of filler (a letter), then tail, in 64 KiB chunks; counts what it handed out. */
function page(head: string, bytes: number, tail: string, fed: { bytes: number }): AsyncIterable<Uint8Array> {
  return (async function* () {
    yield Buffer.from(head);
    fed.bytes += head.length;
    const filler = Buffer.alloc(CHUNK, 'x');
    for (let left = bytes; left > 0; left -= CHUNK) {
      const b = left >= CHUNK ? filler : filler.subarray(0, left);
      fed.bytes += b.length;
      yield b;
    }
    yield Buffer.from(tail);
  })();
}

async function drain(d: PageDecoder, body: AsyncIterable<Uint8Array>, pageNo = 1): Promise<number> {
  let rows = 0;
  for await (const chunk of d.decodePage(body, pageNo)) rows += chunk.length;
  return rows;
}

const cases = [
  {
    type: 'txt' as const,
    head: '\uFEFF"Nr","Kunde","Bemerkung"\n1,"A","kurz"\n2,"B","',
    tail: '"\n3,"C","x"\n',
    column: 'Bemerkung',
    rows: 3,
  },
  {
    type: 'json' as const,
    head: '{"data":[{"Nr":1,"Kunde":"A","Bemerkung":"kurz"},\n{"Nr":2,"Kunde":"B","Bemerkung":"',
    tail: '"},{"Nr":3,"Kunde":"C","Bemerkung":"x"}]}',
    column: 'Bemerkung',
    rows: 3,
  },
  {
    type: 'xml_query' as const,
    head:
      '<?xml version="1.0" encoding="UTF-8"?><result><row><field name="Nr">1</field><field ' +
      'name="Kunde">A</field></row><row><field name="Nr">2</field><field name="Kunde">',
    tail: '</field></row></result>',
    column: 'Kunde',
    rows: 2,
  },
];

describe.each(cases)('$type', ({ type, head, tail, column, rows }) => {
  it('refuses a value above maxValueBytes naming page, row and column, after reading about the limit', async () => {
    const fed = { bytes: 0 };
    const d = makePageDecoder(type, { maxValueBytes: LIMIT });
    const err = (await drain(d, page(head, 50 * LIMIT, tail, fed), 3).catch((e: unknown) => e)) as EtlError;
    expect(err).toMatchObject({
      code: 'VALUE_TOO_LARGE',
      retryable: false,
      stage: 'parse',
      details: { page: 3, row: 2, column },
    });
    expect(err.message).toMatch(
      new RegExp(`^page 3, row 2, column "${column}": a value larger than maxValueBytes \\(${LIMIT} bytes`),
    );
    // It stopped reading soon after the limit: it did not pull the 50 MiB value through.
    expect(fed.bytes).toBeLessThan(3 * LIMIT);
  });

  it('loads a value just under the limit', async () => {
    const d = makePageDecoder(type, { maxValueBytes: LIMIT });
    expect(await drain(d, page(head, LIMIT / 2, tail, { bytes: 0 }))).toBeGreaterThan(LIMIT / 2);
    expect(d.rows).toBe(rows);
  });
});

it('xml_query outside the fast shape (saxes) is bounded too', async () => {
  // Attributes in another order and a comment: the fast scanner hands the page to saxes.
  const head =
    '<?xml version="1.0" encoding="UTF-8"?><result><!-- x --><row><field ' +
    'name="Nr">1</field></row><row><field name="Nr">';
  const fed = { bytes: 0 };
  const d = makePageDecoder('xml_query', { maxValueBytes: LIMIT });
  const err = (await drain(d, page(head, 50 * LIMIT, '</field></row></result>', fed)).catch(
    (e: unknown) => e,
  )) as EtlError;
  expect(err).toMatchObject({ code: 'VALUE_TOO_LARGE', details: { page: 1, row: 2 } });
  expect(fed.bytes).toBeLessThan(3 * LIMIT);
});
