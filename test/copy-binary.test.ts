/**
 * COPY binary format against PostgreSQL's own text input: every value the binary encoders take must load
 * exactly as PostgreSQL reads its text form, in the load session's TimeZone and DateStyle; every form they do not
 * take must be refused (so the loader falls back to text format), and the loader's fall-back must load the report
 * again in text format or fail with PostgreSQL's words.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import pgCopyStreams from 'pg-copy-streams';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BinaryFieldWriter, REFUSED } from '../src/copy-binary/field-writer.ts';
import { CopyOutput } from '../src/pages/copy-text.ts';
import { makePageDecoder } from '../src/pages/decoder.ts';
import { BINARY, binaryEncodingOf, COPY_BINARY_HEADER, COPY_BINARY_TRAILER } from '../src/copy-binary/format.ts';
import { loadRows } from '../src/warehouse/copy-load.ts';
import { withLoadTransaction } from '../src/warehouse/load-transaction.ts';
import type { RowSource } from '../src/warehouse/row-source.ts';
import { findTransitions, zoneAgreesWithDatabase } from '../src/copy-binary/zone-check.ts';
import { makeLocalTimeOffset } from '../src/copy-binary/local-time.ts';
import { migrate } from '../src/history/migrate.ts';
import { makeExactZoneOffset } from '../src/zone-offset.ts';
import { BINARY_COPY_OUTPUT_TYPES, OUTPUT_TYPES } from '../src/vocabulary.ts';
import { makePool } from '../src/app/connections.ts';
import { silentLogger } from '../src/logger.ts';
import { DATABASE_URL, uniqueName } from './support/env.ts';
import { chunked } from './pages-support.ts';

const schema = uniqueName('cbin');
let db: pg.Client;
let pool: pg.Pool;
beforeAll(async () => {
  db = new pg.Client({ connectionString: DATABASE_URL });
  await db.connect();
  await db.query(`CREATE SCHEMA ${schema}`);
  pool = makePool(silentLogger, DATABASE_URL, 2);
  await migrate(pool);
});
afterAll(async () => {
  await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await db.end();
  await pool.end();
});

const textEscape = (v: string | null): string =>
  v === null ? '\\N' : v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t');

/**
 * Loads `values` (text forms) into two tables of `type`, once in binary format through the encoders and once in text
 * format, in a session with TimeZone `zone` and DateStyle ISO, DMY; returns both tables' values as PostgreSQL prints
 * them, in order.
 */
async function loadBoth(
  type: string,
  values: (string | null)[],
  zone = 'Europe/Zurich',
): Promise<{ binary: (string | null)[]; text: (string | null)[] }> {
  const enc = binaryEncodingOf(type);
  if (enc === undefined) throw new Error(`no binary encoding for ${type}`);
  const w = new BinaryFieldWriter([BINARY.int4, enc], zone);
  const out = new CopyOutput();
  const parts: Buffer[] = [COPY_BINARY_HEADER];
  for (const [i, v] of values.entries()) {
    out.reserve(64 + 2 * Buffer.byteLength(v ?? ''));
    out.pos = w.rowStart(out.buf, out.pos);
    const id = Buffer.from(String(i));
    out.pos = w.write(out.buf, out.pos, 0, id, 0, id.length);
    expect(out.pos).toBeGreaterThan(0);
    if (v === null) out.pos = w.writeNull(out.buf, out.pos);
    else {
      const b = Buffer.from(v);
      const p = w.write(out.buf, out.pos, 1, b, 0, b.length);
      if (p === REFUSED) throw new Error(`the ${type} encoder refused ${JSON.stringify(v)}`);
      out.pos = p;
    }
    parts.push(Buffer.from(out.take()!));
  }
  parts.push(COPY_BINARY_TRAILER);
  const t = uniqueName('v');
  await db.query(`SET TimeZone = '${zone}'; SET DateStyle = 'ISO, DMY'`);
  await db.query(
    `CREATE TABLE ${schema}.${t}_b (id int, v ${type}); CREATE TABLE ${schema}.${t}_t (id int, v ${type})`,
  );
  await pipeline(
    Readable.from(parts),
    db.query(pgCopyStreams.from(`COPY ${schema}.${t}_b FROM STDIN WITH (FORMAT binary)`)),
  );
  const text = values.map((v, i) => `${i}\t${textEscape(v)}\n`).join('');
  await pipeline(
    Readable.from([Buffer.from(text)]),
    db.query(pgCopyStreams.from(`COPY ${schema}.${t}_t FROM STDIN WITH (FORMAT text)`)),
  );
  const read = async (suffix: string) =>
    (await db.query<{ v: string | null }>(`SELECT v::text AS v FROM ${schema}.${t}${suffix} ORDER BY id`)).rows.map(
      (r) => r.v,
    );
  return { binary: await read('_b'), text: await read('_t') };
}

async function expectSame(type: string, values: (string | null)[], zone?: string): Promise<void> {
  const { binary, text } = await loadBoth(type, values, zone);
  expect(binary).toEqual(text);
  expect(binary).toHaveLength(values.length);
}

/** Local wall-clock times every 15 minutes through a day, as txt writes them (dd.mm.yyyy hh:mm:ss.mmm). */
function quarterHours(day: string): string[] {
  const [y, m, d] = day.split('-');
  const out: string[] = [];
  for (let q = 0; q < 96; q++)
    out.push(`${d}.${m}.${y} ${String(q >> 2).padStart(2, '0')}:${String((q & 3) * 15).padStart(2, '0')}:00.000`);
  return out;
}

describe('binary encoders load what PostgreSQL reads from the text form', () => {
  it('integers: signs, leading zeros, the int64 edges, beyond 2^53', async () => {
    const ints = [
      '0',
      '-0',
      '+5',
      '007',
      '-1',
      '42',
      '4294967295',
      '4294967296',
      '-4294967297',
      '999999999999999',
      '1000000000000000',
      '9007199254740993',
      '-9007199254740993',
      '123456789012345678',
      '9223372036854775807',
      '-9223372036854775808',
      null,
    ];
    await expectSame('bigint', ints);
    await expectSame('integer', ['0', '-2147483648', '2147483647', '0012', '-7', null]);
    await expectSame('smallint', ['0', '-32768', '32767', '+1', null]);
  });

  it('numerics keep their digits and display scale', async () => {
    const nums = [
      '0',
      '0.00',
      '-0.00',
      '-0',
      '1.50',
      '.5',
      '5.',
      '00012.3400',
      '-98765432109876.54',
      '0.0001',
      '0.00001234',
      '123456789.123456789',
      '10000',
      '100000000',
      '-0.10',
      '99999999999999999999999999999999.000001',
      '12345678',
      null,
    ];
    await expectSame('numeric', nums);
    await expectSame('numeric(12,2)', ['1.005', '-1.004', '12.5', '0', '9999999999.99']);
  });

  it('text and varchar: any bytes, escapes, empty', async () => {
    await expectSame('text', [
      'plain',
      '',
      'Ümlaut ß €',
      'tab\there',
      'back\\slash',
      'new\nline\r',
      '"quoted"',
      '😀',
      null,
    ]);
    await expectSame('character varying(10)', ['short', '', 'zehn zeich']);
  });

  it('booleans', async () => {
    await expectSame('boolean', ['t', 'f', 'true', 'false', null]);
  });

  it('ISO dates, across leap days and the epochs', async () => {
    await expectSame('date', [
      '2012-01-01',
      '2000-01-01',
      '1999-12-31',
      '1970-01-01',
      '2024-02-29',
      '2000-02-29',
      '0001-01-01',
      '9999-12-31',
      '1582-10-10',
      null,
    ]);
  });

  it('ISO timestamps with an offset, with and without seconds and fractions', async () => {
    await expectSame('timestamp with time zone', [
      '2024-03-05T10:15:30Z',
      '2024-03-05T10:15:30.1+01:00',
      '2024-03-05T10:15:30.123456-05:30',
      '2024-03-05 10:15:30.12+0530',
      '2024-03-05T10:15+02',
      '2000-01-01T00:00:00Z',
      '1999-12-31T23:59:59.999999Z',
      '1850-06-01T12:00:00+00:00',
      '0001-01-01T00:00:00Z',
      '9999-12-31T23:59:59.999999-14:00',
      '2024-02-29T12:00:00+00:00',
      null,
    ]);
    await expectSame('timestamp(3) with time zone', ['2024-03-05T10:15:30.1234Z', '2024-03-05T10:15:30.9995Z']);
  });

  it(
    'txt timestamps and ISO times without offset, ' + 'in the zone, through every quarter hour of transition days',
    async () => {
      for (const zone of ['Europe/Zurich', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata', 'UTC']) {
        expect(await zoneAgreesWithDatabase(db, zone)).toBe(true);
      }
      const zurich = [
        ...quarterHours('2024-03-31'),
        ...quarterHours('2024-10-27'),
        ...quarterHours('1981-03-29'),
        '29.02.2024 23:59:59.999',
        '01.01.1900 00:00:00',
        '15.06.1850 12:00:00',
        '31.12.9999 23:59:59.999',
        '2024-03-31 02:30:00',
        '2024-10-27T02:30:00.5',
      ];
      await expectSame('timestamp with time zone', zurich, 'Europe/Zurich');
      await expectSame(
        'timestamp with time zone',
        [...quarterHours('2024-03-10'), ...quarterHours('2024-11-03')],
        'America/New_York',
      );
      await expectSame(
        'timestamp with time zone',
        [...quarterHours('2024-04-07'), ...quarterHours('2024-10-06')],
        'Australia/Lord_Howe',
      );
    },
  );

  it(
    'local times of years 1 to 99 and near historical transitions ' +
      'that fall on odd seconds, where the zone check passes',
    async () => {
      const cases: [string, string[]][] = [
        [
          'Europe/Berlin',
          [
            '0050-06-01 12:00:00',
            '01.06.0050 12:00:00',
            '0001-01-01 00:00:00',
            '1893-03-31 23:59:59',
            '1893-04-01 00:00:00',
            '1893-04-01 00:06:31',
            '1893-04-01 00:06:32',
            '1893-04-01 00:10:00',
          ],
        ],
        [
          'Asia/Kolkata',
          [
            '1906-01-01 00:00:00',
            '1906-01-01 00:10:00',
            '1906-01-01 00:30:00',
            '1941-10-01 00:00:00',
            '1942-05-15 00:00:00',
          ],
        ],
        ['Europe/Zurich', ['1894-05-31 23:50:00', '1894-06-01 00:10:00', '0099-12-31 23:59:59']],
      ];
      for (const [zone, values] of cases) {
        if (await zoneAgreesWithDatabase(db, zone)) await expectSame('timestamp with time zone', values, zone);
      }
      expect(await zoneAgreesWithDatabase(db, 'Europe/Zurich')).toBe(true);
    },
  );

  it('asks PostgreSQL once per zone, also for calls while it asks, and asks again after a failure', async () => {
    const zone = 'America/Sao_Paulo';
    let queries = 0;
    let fail = true;
    const counting = {
      query: (text: string, values?: unknown[]) => {
        queries += 1;
        if (fail) return Promise.reject(new Error('connection lost'));
        return db.query(text, values);
      },
    } as unknown as pg.Client;
    await expect(zoneAgreesWithDatabase(counting, zone)).rejects.toThrow('connection lost');
    fail = false;
    const [a, b, c] = await Promise.all([
      zoneAgreesWithDatabase(counting, zone),
      zoneAgreesWithDatabase(counting, zone),
      zoneAgreesWithDatabase(counting, zone),
    ]);
    expect([a, b, c]).toEqual([true, true, true]);
    expect(await zoneAgreesWithDatabase(counting, zone)).toBe(true);
    expect(queries).toBe(2);
  });

  it("a call waiting on another load's question that fails asks on its own transaction", async () => {
    const zone = 'Pacific/Chatham';
    const failing = {
      query: () =>
        new Promise((_, reject) => setTimeout(() => reject(new Error('canceling statement due to user request')), 50)),
    } as unknown as pg.Client;
    const [a, b] = await Promise.allSettled([zoneAgreesWithDatabase(failing, zone), zoneAgreesWithDatabase(db, zone)]);
    expect(a).toMatchObject({ status: 'rejected', reason: { message: 'canceling statement due to user request' } });
    expect(b).toEqual({ status: 'fulfilled', value: true });
  });

  it('BINARY_COPY_OUTPUT_TYPES are exactly the output types whose decoders can write binary format', () => {
    const binary = OUTPUT_TYPES.filter((t) => makePageDecoder(t).writesBinary);
    expect(binary).toEqual([...BINARY_COPY_OUTPUT_TYPES]);
  });

  it('refuses every other form, so that PostgreSQL reads it in text format', () => {
    const refused: [string, string[]][] = [
      [
        'bigint',
        [
          '',
          ' 1',
          '1 ',
          '1.0',
          '1e3',
          '0x1F',
          '1_000',
          '9223372036854775808',
          '-9223372036854775809',
          '99999999999999999999',
          '-',
          'abc',
        ],
      ],
      ['integer', ['2147483648', '-2147483649', '1.5']],
      ['smallint', ['32768', '-32769']],
      ['numeric', ['', '.', '1e5', 'NaN', 'Infinity', ' 1', '1,5', '1.2.3', '+-1']],
      ['boolean', ['yes', 'no', '1', '0', 'TRUE', 'on', '']],
      ['date', ['2015/01/01', '01.02.2015', 'Jun 12 1998', '2015-02-30', '1900-02-29', '0000-01-01', '2015-1-01', '']],
      [
        'timestamp with time zone',
        [
          '2024-03-05',
          'now',
          '2024-02-30T10:00:00Z',
          '2024-03-05T24:00:00Z',
          '2024-03-05T10:60:00Z',
          '2024-03-05T10:00:60Z',
          '2024-03-05T10:00:00.1234567Z',
          '2024-03-05T10:00:00 Europe/Zurich',
          '0000-01-01T00:00:00Z',
          '32.01.2024 10:00:00',
          '05.13.2024 10:00:00',
          '2024-03-05T10:00:00+16:00',
          '2024-03-05t10:00:00z',
        ],
      ],
    ];
    for (const [type, forms] of refused) {
      const w = new BinaryFieldWriter([binaryEncodingOf(type)!], 'Europe/Zurich');
      for (const f of forms) {
        const out = new CopyOutput();
        out.reserve(64);
        const b = Buffer.from(f);
        expect({ type, form: f, at: w.write(out.buf, 0, 0, b, 0, b.length) }).toEqual({ type, form: f, at: REFUSED });
      }
    }
  });

  it('knows which column types it encodes', () => {
    expect(
      [
        'bigint',
        'integer',
        'smallint',
        'numeric',
        'numeric(12,2)',
        'text',
        'character varying',
        'character varying(80)',
        'boolean',
        'timestamp with time zone',
        'timestamp(3) with time zone',
        'date',
      ]
        .map(binaryEncodingOf)
        .every((e) => e !== undefined),
    ).toBe(true);
    for (const t of [
      'jsonb',
      'timestamp without time zone',
      'double precision',
      'character(3)',
      'uuid',
      'text[]',
      'bytea',
      'xml',
    ])
      expect(binaryEncodingOf(t)).toBeUndefined();
  });
});

describe("local times read from a day's cached transition", () => {
  /**
   * PostgreSQL's rule for a local time, asking Intl at every instant it needs (what each time near a transition once
   * cost).
   */
  function reference(zone: string): (local: number) => number {
    const offsetAt = makeExactZoneOffset(zone);
    return (local) => {
      const before = offsetAt(local - 129_600_000);
      const after = offsetAt(local + 129_600_000);
      const beforeFits = offsetAt(local - before) === before;
      const afterFits = offsetAt(local - after) === after;
      if (beforeFits !== afterFits) return beforeFits ? before : after;
      return beforeFits ? after : before;
    };
  }

  it('gives every local time around transitions the offset Intl gives it time by time, to the second', () => {
    const zones = [
      'Europe/Zurich',
      'Europe/Berlin',
      'Asia/Kolkata',
      'Australia/Lord_Howe',
      'America/Sao_Paulo',
      'Pacific/Apia',
      'Europe/Moscow',
      'America/St_Johns',
    ];
    let compared = 0;
    for (const zone of zones) {
      const exact = reference(zone);
      const cached = makeLocalTimeOffset(zone);
      const offsetAt = makeExactZoneOffset(zone);
      const all = findTransitions(offsetAt, Date.UTC(1850, 0, 1), Date.UTC(2041, 0, 1), 7 * 86_400_000);
      // The first transitions (local mean time, odd seconds), a few from the middle, the last ones.
      const some = [...all.slice(0, 3), ...all.filter((_t, k) => k % 40 === 20), ...all.slice(-2)];
      for (const t of some) {
        // Every second within 10 minutes of the transition as the wall clock shows it before and after, then every 193
        // s
        // for a day.
        const locals: number[] = [];
        for (const wall of [t + offsetAt(t - 1000), t + offsetAt(t)])
          for (let s = -600; s <= 600; s++) locals.push(wall + s * 1000);
        for (let s = -43_200; s <= 43_200; s += 193) locals.push(t + s * 1000 + 500);
        for (const local of locals) {
          const want = exact(local);
          const got = cached(local);
          if (got !== want)
            expect({ zone, local: new Date(local).toISOString(), got }).toEqual({
              zone,
              local: new Date(local).toISOString(),
              got: want,
            });
        }
        compared += locals.length;
      }
    }
    expect(compared).toBeGreaterThan(100_000);
  });
});

/** A RowSource over JSON pages held in memory, through the real json decoder (what report-rows.ts does over HTTP). */
function jsonPages(pages: string[], chunkBytes = 7): RowSource & { starts: number } {
  let decoder = makePageDecoder('json');
  let first: IteratorResult<Buffer> | undefined;
  let failed: { err: unknown } | undefined;
  const all = async function* (): AsyncGenerator<Buffer> {
    for (const [k, p] of pages.entries()) yield* decoder.decodePage(chunked(Buffer.from(p), chunkBytes), k + 1);
  };
  let gen = all();
  const src = {
    starts: 1,
    copyFormat: decoder.copyFormat,
    writesBinary: decoder.writesBinary,
    get format() {
      return decoder.format;
    },
    async open(plan: Parameters<RowSource['open']>[0]) {
      decoder.planRows(plan);
      try {
        first = await gen.next();
      } catch (err) {
        if (decoder.columns === undefined) throw err;
        failed = { err };
      }
      return decoder.columns;
    },
    async *rows() {
      if (failed) {
        const { err } = failed;
        failed = undefined;
        throw err;
      }
      if (first && !first.done && first.value.length > 0) yield first.value;
      yield* gen;
    },
    async restart() {
      await gen.return(undefined);
      decoder = makePageDecoder('json');
      src.starts++;
      gen = all();
    },
    kinds: () => decoder.kinds,
    pageOfRow: () => 1,
    rowsBeforePage: () => 0,
    async close() {
      await gen.return(undefined);
    },
  };
  return src;
}

describe('the loader in binary format', () => {
  const load = async (table: string, pages: string[], chunkBytes?: number) => {
    const source = jsonPages(pages, chunkBytes);
    let result: Awaited<ReturnType<typeof loadRows>> | undefined;
    await withLoadTransaction(pool, { target: { schema, table }, timezone: 'Europe/Zurich' }, async (lt) => {
      const spec = {
        target: { schema, table },
        mode: 'replace' as const,
        key: [],
        declaredTypes: new Map(),
        expectedRows: undefined,
        timezone: 'Europe/Zurich',
        binaryMinRows: 0,
        logger: silentLogger,
      };
      result = await loadRows(lt.tx, spec, source);
      await lt.commit();
    });
    return { result: result!, starts: source.starts };
  };

  it('loads typed columns in binary format once the target exists, with the values of a text load', async () => {
    const page = JSON.stringify({
      data: [
        { nr: 1, betrag: '12.50', am: '2024-03-05T10:15:30.5+01:00', ok: true, name: 'a\tb\\c', tag: '2024-02-29' },
        { nr: 2, betrag: null, am: null, ok: false, tag: '1999-12-31' },
      ],
    });
    const first = await load('fmt', [page]);
    expect(first.result).toMatchObject({ plan: 'inference-staging', format: 'text' });
    const before = (await db.query(`SELECT * FROM ${schema}.fmt ORDER BY nr`)).rows;
    expect(
      (
        await db.query(
          `SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute WHERE attrelid = ` +
            `'${schema}.fmt'::regclass AND attname = 'tag'`,
        )
      ).rows,
    ).toEqual([{ t: 'date' }]);
    const second = await load('fmt', [page]);
    expect(second).toMatchObject({ result: { plan: 'direct', format: 'binary', rows: 2 }, starts: 1 });
    expect((await db.query(`SELECT * FROM ${schema}.fmt ORDER BY nr`)).rows).toEqual(before);
  });

  it('loads the report again in text format when a value is in a form the encoders do not take', async () => {
    await db.query(`CREATE TABLE ${schema}.fallback (nr bigint, wert numeric)`);
    // 1e3 is a JSON number PostgreSQL reads as numeric, but not a form the binary encoder takes.
    const pages = [
      JSON.stringify({ data: [{ nr: 1, wert: 2.5 }] }),
      JSON.stringify({ data: [{ nr: 2, wert: 1e3 }].map((r) => r) }).replace('1000', '1e3'),
    ];
    const { result, starts } = await load('fallback', pages);
    expect(result).toMatchObject({ plan: 'direct', format: 'text', rows: 2 });
    expect(starts).toBe(2);
    expect((await db.query(`SELECT nr::text, wert::text FROM ${schema}.fallback ORDER BY nr`)).rows).toEqual([
      { nr: '1', wert: '2.5' },
      { nr: '2', wert: '1000' },
    ]);
  });

  it('writes JSON integers into bigint columns as PostgreSQL reads them, in one pass or the general one', async () => {
    const ints = [
      '0',
      '-0',
      '7',
      '-7',
      '979',
      '-20',
      '123456789012345',
      '-999999999999999',
      '1234567890123456',
      '9007199254740993',
      '-9223372036854775808',
      '9223372036854775807',
    ];
    await db.query(`CREATE TABLE ${schema}.ints (nr bigint, n bigint)`);
    const page = `{"data":[${ints.map((v, k) => `{"nr":${k},"n":${v}}`).join(',')}]}`;
    const { result } = await load('ints', [page]);
    expect(result).toMatchObject({ plan: 'direct', format: 'binary', rows: ints.length });
    const { rows } = await db.query(
      `SELECT n::text AS n, (n = ($1::text[])[nr + 1]::bigint) AS same FROM ${schema}.ints ORDER BY nr`,
      [ints],
    );
    expect(rows.map((r: { same: boolean }) => r.same)).toEqual(ints.map(() => true));
  });

  it('refuses an escaped string with a raw control byte that PostgreSQL would read into a bigint as 1', async () => {
    await db.query(`CREATE TABLE ${schema}.escaped (nr bigint, n bigint)`);
    // PostgreSQL's int8in skips the tab: "1<tab>" would load as 1, a value changed on its way in.
    const pages = [`{"data":[{"nr":2,"n":7},{"nr":1,"n":"\\u0031\t"}]}`];
    await expect(load('escaped', pages)).rejects.toThrow(
      /^value "1\t" does not fit column n of type bigint in .*page 1, row 2 of the page \(row 2 of the run\): it is /,
    );
    expect((await db.query(`SELECT count(*)::int AS n FROM ${schema}.escaped`)).rows).toEqual([{ n: 0 }]);
  });

  it('writes wide rows whose keys are missing (NULLs from no input) without running out of room', async () => {
    const cols = Array.from({ length: 200 }, (_, k) => `c${k}`);
    await db.query(`CREATE TABLE ${schema}.wide (${cols.map((c) => `${c} bigint`).join(', ')})`);
    // The first row names every column; most others only c0 (199 NULLs each), every 1000th two keys out of order.
    const first = `{${cols.map((c) => `"${c}":${c === 'c0' || c === 'c199' ? 0 : 'null'}`).join(',')}}`;
    const rows = Array.from({ length: 20_000 }, (_, k) =>
      k === 0 ? first : k % 1000 === 0 ? `{"c199":${k},"c0":${k}}` : `{"c0":${k}}`,
    );
    const { result } = await load('wide', [`{"data":[${rows.join(',')}]}`], 65_536);
    expect(result).toMatchObject({ plan: 'direct', format: 'binary', rows: 20_000 });
    const { rows: sums } = await db.query(
      `SELECT count(*)::int AS n, sum(c0)::text AS s0, sum(c199)::text AS s199, count(c1)::int AS c1 FROM ` +
        `${schema}.wide`,
    );
    expect(sums).toEqual([
      {
        n: 20_000,
        s0: String((19_999 * 20_000) / 2),
        s199: String(Array.from({ length: 20 }, (_, k) => k * 1000).reduce((a, b) => a + b)),
        c1: 0,
      },
    ]);
  });

  it('fails a value PostgreSQL refuses with the words of a text load, the target untouched', async () => {
    await db.query(
      `CREATE TABLE ${schema}.refused (nr bigint, name varchar(3)); INSERT INTO ${schema}.refused VALUES (7, 'old')`,
    );
    const pages = [
      JSON.stringify({
        data: [
          { nr: 1, name: 'abc' },
          { nr: 2, name: 'abcd' },
        ],
      }),
    ];
    await expect(load('refused', pages)).rejects.toThrow(
      /value "abcd" does not fit column name of type character varying\(3\) in .*refused.*value too long/,
    );
    expect((await db.query(`SELECT nr::int, name FROM ${schema}.refused`)).rows).toEqual([{ nr: 7, name: 'old' }]);
  });
});
