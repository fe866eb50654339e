/**
 * Deterministic row generators behind the simulator's catalogue: every cell is a pure function of
 * (seed, row index), drawn from a cheap PRNG, so a page can be rendered again byte for byte and a test
 * can recompute any row without the server.
 */

/** One cell as the renderers see it: text and exact number digits as strings, timestamps as epoch ms, NULL as null. */
export type Cell = string | number | null;

/** Produces the cells of row `i` (0-based). */
export type RowGenerator = (i: number) => Cell[];

const DAY_MS = 86_400_000;
/** 10:00 UTC: generated times fall in 10:00..16:59:59.999 UTC, away from every European and American DST switch. */
const BUSINESS_START_MS = 10 * 3_600_000;
const BUSINESS_SPAN_MS = 7 * 3_600_000;

let state = 0;

/** Seeds the row PRNG from (seed, i) with a murmur3-style finaliser. */
function seedRow(seed: number, i: number, salt: number): void {
  let h = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(i + salt, 0xc2b2ae35);
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  state = (h ^ (h >>> 16)) >>> 0;
}

/** Next uint32 (mulberry32). */
function next(): number {
  state = (state + 0x6d2b79f5) | 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return (t ^ (t >>> 14)) >>> 0;
}

/** Uniform integer in [0, n). */
function below(n: number): number {
  return next() % n;
}

const PAD2: string[] = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));

/** Cents -> exact decimal string with 2 places: -5 -> "-0.05". */
function cents(c: number): string {
  const a = Math.abs(c);
  return `${c < 0 ? '-' : ''}${Math.floor(a / 100)}.${PAD2[a % 100]}`;
}

/** A time range for generated timestamps: days [fromDay, fromDay + days) since the epoch (UTC). */
export interface DayRange {
  fromDay: number;
  days: number;
}

/** Default range: 2024-01-01 .. 2025-12-31. */
export const DEFAULT_RANGE: DayRange = { fromDay: Date.UTC(2024, 0, 1) / DAY_MS, days: 731 };

function businessTime(range: DayRange): number {
  return (range.fromDay + below(range.days)) * DAY_MS + BUSINESS_START_MS + below(BUSINESS_SPAN_MS);
}

/** Customer names: umlauts, other scripts, quotes, commas, a line break, padding spaces, XML specials. */
export const KUNDEN: readonly string[] = [
  'Müller AG',
  'Bäckerei Öztürk & Söhne',
  'Café "Zur Sonne", Zürich',
  'Łódź Handel Sp. z o.o.',
  '日本商事株式会社',
  'Straßenbau Graubünden\nAbteilung Nord',
  '  Leerzeichen GmbH  ',
  'Preis & Co. <Schweiz> €',
  "O'Brien, Ltd.",
  'ÄÖÜ äöü ß Handels GmbH',
  'Crème Brûlée SARL',
  'Backslash \\ Trading',
  '"Quoted" Imports',
  'Zeta, Alpha; Beta',
  'Ñandú Exportaciones',
  'Plain Customer Inc',
];

const BEMERKUNGEN: readonly string[] = [
  'Express',
  'Lieferung verschoben',
  'Rückfrage: "Farbe?"',
  'Teil 1/2, Rest folgt',
  'Zahlung per Überweisung\r\nfällig in 30 Tagen',
  '0042',
  'Emoji 🚀👍🏽 mit\tTab',
];

/**
 * Sales order rows (Sales/Orders, Big). Columns, in order: Auftrag Nr, Kunde, Menge Stk, Betrag,
 * Rabatt %, Erfasst Am, Bemerkung, Beleg ID.
 */
export function salesRows(seed: number, range: DayRange): RowGenerator {
  return (i) => {
    seedRow(seed, i, 1);
    const kunde = KUNDEN[below(KUNDEN.length)]!;
    const menge = String(below(1000) - 20);
    const b = below(100);
    const betrag =
      b < 3
        ? '0.10'
        : b < 5
          ? '-0.05'
          : b === 5
            ? '98765432109876.54'
            : b === 6
              ? '0.00'
              : cents(below(2_000_000) - 200_000);
    const rk = below(10) < 4 ? -1 : below(301);
    const rabatt = rk < 0 ? null : `${Math.floor(rk / 10)}.${rk % 10}`;
    const erfasst = businessTime(range);
    const bk = below(10);
    const bemerkung = bk < 3 ? null : bk < 6 ? '' : BEMERKUNGEN[below(BEMERKUNGEN.length)]!;
    // 9007199254740993 + i: 2^53 + 1 upwards, never representable as a double for odd values.
    const beleg = i < 5_259_007 ? `900719925${4_740_993 + i}` : (9_007_199_254_740_993n + BigInt(i)).toString();
    return [String(100_000 + i), kunde, menge, betrag, rabatt, erfasst, bemerkung, beleg];
  };
}

const ARTIKEL: readonly string[] = [
  'Schraube M4',
  'Mutter M4',
  'Kabel 3×1.5 mm²',
  'Dübel 8 mm',
  'Winkel 90°',
  'Leim "Extra"',
];
const LAGER: readonly string[] = ['Zürich', 'Bern', 'Genève', 'Lugano'];

/** Stock level rows: Artikel, Lager, Bestand, Stand (a fixed day, 2024-06-28). */
export function stockRows(seed: number): RowGenerator {
  const range: DayRange = { fromDay: Date.UTC(2024, 5, 28) / DAY_MS, days: 1 };
  return (i) => {
    seedRow(seed, i, 2);
    return [
      `${ARTIKEL[i % ARTIKEL.length]} #${i + 1}`,
      LAGER[below(LAGER.length)]!,
      String(below(501)),
      businessTime(range),
    ];
  };
}

const KONTEN: readonly string[] = ['1020', '0100', '3200', '4000', '6570', '2000'];

/** Ledger rows: Buchung Nr, Konto (digits-only text), Soll, Haben (exactly one of the two is NULL), Valuta, Text. */
export function ledgerRows(seed: number, range: DayRange): RowGenerator {
  return (i) => {
    seedRow(seed, i, 3);
    const konto = KONTEN[below(KONTEN.length)]!;
    const amount = cents(below(10_000_000) + 1);
    const soll = below(2) === 0;
    const valuta = businessTime(range);
    const text = below(4) === 0 ? '' : `Buchung ${i + 1}: ${konto}`;
    return [String(i + 1), konto, soll ? amount : null, soll ? null : amount, valuta, text];
  };
}

/** Drift rows: Nr, Wert: integers in the first half of the rows, decimals with 2 places in the second. */
export function driftRows(seed: number, rowCount: number): RowGenerator {
  const half = Math.floor(rowCount / 2);
  return (i) => {
    seedRow(seed, i, 4);
    const v = below(200_000) - 100_000;
    return [String(i + 1), i < half ? String(v) : cents(v)];
  };
}

/** Simple rows: Nr, Name, Wert (decimal). */
export function simpleRows(seed: number): RowGenerator {
  return (i) => {
    seedRow(seed, i, 5);
    return [String(i + 1), `Eintrag ${i + 1}`, cents(below(100_000))];
  };
}

/** Most bookings a day of one mandant holds (slots 1..BOOKING_SLOTS, each present or not in a revision). */
const BOOKING_SLOTS = 4;

/** A uint32 hash of (seed, mandant, day, slot, revision), murmur3-style. */
function bookingHash(seed: number, mandant: string, day: number, slot: number, revision: number): number {
  let h = seed ^ 0x2545f491;
  for (const v of [...Array.from(mandant, (c) => c.charCodeAt(0)), day, slot, revision]) {
    h = Math.imul(h ^ v, 0xcc9e2d51);
    h = Math.imul((h << 15) | (h >>> 17), 0x1b873593);
  }
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * Bookings of a mandant: per day of `range`, up to four bookings (Buchung Nr `yyyymmdd-k`, Buchungstag `yyyy-mm-dd`,
 * Betrag, Text). Which exist and their amounts depend on (seed, mandant, day, revision): a new revision of the
 * server's data corrects, adds and deletes bookings of every day, as an ERP's late postings do.
 * @returns the row count and the generator
 */
export function bookingRows(
  seed: number,
  range: DayRange,
  mandant: string,
  revision: number,
): { rowCount: number; rows: RowGenerator } {
  const present: [number, number, number][] = [];
  for (let d = 0; d < range.days; d++) {
    const day = range.fromDay + d;
    for (let k = 1; k <= BOOKING_SLOTS; k++) {
      const h = bookingHash(seed, mandant, day, k, revision);
      if (h % 3 !== 0) present.push([day, k, h]);
    }
  }
  return {
    rowCount: present.length,
    rows: (i) => {
      const [day, k, h] = present[i]!;
      const date = new Date(day * DAY_MS).toISOString().slice(0, 10);
      const nr = `${date.replace(/-/g, '')}-${k}`;
      return [nr, date, cents((h >>> 2) % 1_000_000), `Mandant ${mandant} Buchung ${nr}`];
    },
  };
}
