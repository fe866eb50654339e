/**
 * Decode-only throughput of the page decoders (src/pages): MB/s of page bytes and rows/s, for each output
 * type, inspect on and off. 1,000,000 realistic ERP rows (text with umlauts and quotes, integers, decimals,
 * timestamps, big integers, nulls) are pre-rendered into pages of 10,000 rows in memory first, then fed in
 * 64 KiB chunks; the yielded Buffers are only counted. Run: `npx node bench/pages.ts [rows]`.
 */
import type { OutputType } from '../src/vocabulary.ts';
import { makePageDecoder } from '../src/pages/decoder.ts';

const ROWS = Number(process.argv[2] ?? 1_000_000);
const PAGING = 10_000;
const CHUNK = 64 * 1024;

const COLUMNS = [
  'Auftrag Nr',
  'Kunde',
  'Artikel',
  'Menge Stk',
  'Preis',
  'Betrag',
  'Beleg ID',
  'Erfasst am',
  'Bemerkung',
  'Rabatt',
];
const NAMES = [
  'Müller AG',
  'Bäckerei "Zum Löwen"',
  'Schmidt & Söhne, Zürich',
  'Jürgen Weiß',
  'Café Crème',
  'Ölmühle Nord',
  '日本商事',
  'Größe € GmbH',
];
const ARTICLES = [
  'Schraube M8, verzinkt',
  'Kabel 3x1.5mm² "flex"',
  'Dübel 8mm',
  'Mutter M8',
  'Rohr Ø 20mm\nLänge 2m',
  'Ventil ½"',
];

/** One row as typed values: [string | null, number-as-string, timestamp parts, ...]. */
interface Row {
  nr: string;
  kunde: string;
  artikel: string;
  menge: string;
  preis: string;
  betrag: string;
  beleg: string;
  ts: Date;
  bemerkung: string | null;
  rabatt: string | null;
}

/** `cents` (>= 0) as a decimal with two places: 1234 -> "12.34". */
const decimal = (cents: number) => `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;

function makeRow(i: number): Row {
  const menge = (i * 7) % 500;
  const cents = ((i * 7919) % 200_000) - 10_000;
  const preis = `${cents < 0 ? '-' : ''}${decimal(Math.abs(cents))}`;
  return {
    nr: String(1_000_000 + i),
    kunde: NAMES[i % NAMES.length]!,
    artikel: ARTICLES[i % ARTICLES.length]!,
    menge: String(menge),
    preis,
    betrag: decimal(menge * Math.abs(cents)),
    beleg: (9_007_199_254_740_993n + BigInt(i) * 1_000_003n).toString(),
    ts: new Date(Date.UTC(2024, 0, 1) + i * 61_123),
    bemerkung: i % 3 === 0 ? null : i % 3 === 1 ? '' : `Lieferung ${i % 17} / Tür ${i % 5}`,
    rabatt: i % 4 === 0 ? null : `0.${String(i % 100).padStart(2, '0')}`,
  };
}

const pad = (n: number, w = 2): string => String(n).padStart(w, '0');
const txtTs = (d: Date): string =>
  `${pad(d.getUTCDate())}.${pad(d.getUTCMonth() + 1)}.${d.getUTCFullYear()} ` +
  `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(d.getUTCMilliseconds(), 3)}`;
const isoTs = (d: Date): string => d.toISOString().replace('Z', '+00:00');
const q = (s: string): string => `"${s.replaceAll('"', '""')}"`;
const xmlEsc = (s: string): string => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

function renderTxt(rows: Row[]): string {
  const lines = [COLUMNS.map(q).join(',')];
  for (const r of rows) {
    lines.push(
      [
        r.nr,
        q(r.kunde),
        q(r.artikel),
        r.menge,
        r.preis,
        r.betrag,
        r.beleg,
        txtTs(r.ts),
        r.bemerkung === null ? '' : q(r.bemerkung),
        r.rabatt ?? '',
      ].join(','),
    );
  }
  return `\uFEFF${lines.join('\r\n')}\r\n`;
}

function jsonRow(r: Row, pretty: boolean): string {
  const vals = [
    r.nr,
    JSON.stringify(r.kunde),
    JSON.stringify(r.artikel),
    r.menge,
    r.preis,
    r.betrag,
    r.beleg,
    JSON.stringify(isoTs(r.ts)),
    r.bemerkung === null ? 'null' : JSON.stringify(r.bemerkung),
    r.rabatt ?? 'null',
  ];
  if (!pretty) return `{${COLUMNS.map((c, k) => `${JSON.stringify(c)}:${vals[k]}`).join(',')}}`;
  return `    {\n${COLUMNS.map((c, k) => `      ${JSON.stringify(c)}: ${vals[k]}`).join(',\n')}\n    }`;
}

function renderJson(rows: Row[], pretty: boolean): string {
  const body = rows.map((r) => jsonRow(r, pretty));
  return pretty ? `{\n  "data": [\n${body.join(',\n')}\n  ]\n}` : `{"data":[${body.join(',')}]}`;
}

function renderXml(rows: Row[]): string {
  const parts = ['<?xml version="1.0" encoding="UTF-8"?><result>'];
  for (const r of rows) {
    const vals = [
      r.nr,
      r.kunde,
      r.artikel,
      r.menge,
      r.preis,
      r.betrag,
      r.beleg,
      isoTs(r.ts),
      r.bemerkung ?? '',
      r.rabatt ?? '',
    ];
    parts.push(`<row>${COLUMNS.map((c, k) => `<field name="${c}">${xmlEsc(vals[k]!)}</field>`).join('')}</row>`);
  }
  parts.push('</result>');
  return parts.join('');
}

function render(type: OutputType): Buffer[] {
  const pages: Buffer[] = [];
  for (let start = 0; start < ROWS; start += PAGING) {
    const rows: Row[] = [];
    for (let i = start; i < Math.min(ROWS, start + PAGING); i++) rows.push(makeRow(i));
    const text =
      type === 'txt' ? renderTxt(rows) : type === 'xml_query' ? renderXml(rows) : renderJson(rows, type === 'json');
    pages.push(Buffer.from(text, 'utf8'));
  }
  return pages;
}

async function* chunks(page: Buffer): AsyncGenerator<Buffer> {
  for (let i = 0; i < page.length; i += CHUNK) yield page.subarray(i, i + CHUNK);
}

async function measure(
  type: OutputType,
  pages: Buffer[],
  inspect: boolean,
  expectedRows: number,
): Promise<{ ms: number; outBytes: number; rows: number }> {
  const decoder = makePageDecoder(type);
  decoder.planRows(() => ({ inspect }));
  let outBytes = 0;
  const t0 = performance.now();
  for (let p = 0; p < pages.length; p++) {
    for await (const out of decoder.decodePage(chunks(pages[p]!), p + 1)) outBytes += out.length;
  }
  const ms = performance.now() - t0;
  if (decoder.rows !== expectedRows) throw new Error(`${type}: decoded ${decoder.rows} rows, expected ${expectedRows}`);
  return { ms, outBytes, rows: decoder.rows };
}

const types: OutputType[] = (process.env.TYPES?.split(',') as OutputType[] | undefined) ?? [
  'txt',
  'json',
  'json_compact',
  'xml_query',
];
console.log(`rows=${ROWS} paging=${PAGING} chunk=${CHUNK} B, node ${process.version}`);
for (const type of types) {
  const pages = render(type);
  const bytes = pages.reduce((s, p) => s + p.length, 0);
  for (const inspect of [true, false]) {
    await measure(type, pages.slice(0, 5), inspect, Math.min(ROWS, 5 * PAGING)); // warm-up
    let best = Infinity;
    let outBytes = 0;
    for (let r = 0; r < 3; r++) {
      const m = await measure(type, pages, inspect, ROWS);
      best = Math.min(best, m.ms);
      outBytes = m.outBytes;
    }
    const s = best / 1000;
    console.log(
      `${type.padEnd(12)} inspect=${String(inspect).padEnd(5)} in ${(bytes / 1e6).toFixed(0).padStart(4)} MB  ` +
        `out ${(outBytes / 1e6).toFixed(0).padStart(4)} MB  ` +
        `${(bytes / 1e6 / s).toFixed(0).padStart(5)} MB/s  ${(ROWS / s / 1e6).toFixed(2)} M ` +
        `rows/s  (${best.toFixed(0)} ms)`,
    );
  }
}
