/**
 * The simulator's report catalogue: which reports exist (docs/report-export-service.md "Report naming rules": sub
 * folders, extensions avw/avx) and the rows each one returns, deterministic by seed. Tests use {@link reportData} to
 * compare what was loaded with what was served.
 */
import { isoUtc } from './time-format.ts';
import {
  DEFAULT_RANGE,
  driftRows,
  bookingRows,
  ledgerRows,
  salesRows,
  simpleRows,
  stockRows,
  type Cell,
  type DayRange,
  type RowGenerator,
} from './data.ts';

/** Column types the generic output types can carry (booleans are not generated). */
export type ColumnKind = 'text' | 'integer' | 'decimal' | 'timestamp' | 'boolean';

/** One report column: its name as the server writes it, and its kind. */
export interface ReportColumn {
  name: string;
  kind: ColumnKind;
}

/**
 * Canonical values: text as-is, integer/decimal as the exact digit string ("-12.50", "9007199254740993"),
 * timestamp as ISO UTC with ms ("2024-03-01T11:34:56.789Z"), boolean 'true'/'false', null for NULL.
 */
export type CanonicalValue = string | null;

/** The rows of one report run. */
export interface ReportData {
  columns: ReportColumn[];
  /** Number of data rows. */
  rowCount: number;
  /**
   * Set when a row may lack a column's key in json: a cell `undefined` in {@link cells} (NULL in every other type).
   */
  missingKeys?: boolean;
  /** Canonical values of row `index` (0-based, < rowCount). */
  row(index: number): CanonicalValue[];
  /** The renderers' fast form of row `index`: like {@link row} but timestamps as epoch ms. */
  cells(index: number): Cell[];
  /**
   * When set, the job ends FinishedError with this text (docs/report-export-service.md "Job (report session)": message
   * may contain line breaks).
   */
  failure?: string;
}

/** One catalogue entry: path as folders/name.ext, what it is, default row count (parameter ROWS overrides). */
export interface CatalogueEntry {
  path: string;
  description: string;
  defaultRows: number;
}

/** Message of the report 'Failing.avw'. */
export const FAILING_MESSAGE = "Report execution failed:\nDivision by zero in formula 'Marge'\nline 42";

const SALES_COLUMNS: ReportColumn[] = [
  { name: 'Auftrag Nr', kind: 'integer' },
  { name: 'Kunde', kind: 'text' },
  { name: 'Menge Stk', kind: 'integer' },
  { name: 'Betrag', kind: 'decimal' },
  { name: 'Rabatt %', kind: 'decimal' },
  { name: 'Erfasst Am', kind: 'timestamp' },
  { name: 'Bemerkung', kind: 'text' },
  { name: 'Beleg ID', kind: 'integer' },
];
const SIMPLE_COLUMNS: ReportColumn[] = [
  { name: 'Nr', kind: 'integer' },
  { name: 'Name', kind: 'text' },
  { name: 'Wert', kind: 'decimal' },
];

/** The server's side of a report's data: the mandant it runs in and the revision of its data (SimServerData). */
export interface DataState {
  mandant: string;
  revision: number;
}

interface Definition extends CatalogueEntry {
  columns: ReportColumn[];
  rows(seed: number, rowCount: number, range: DayRange): RowGenerator;
  /** A report whose rows, and so its row count, follow its range, mandant and revision (ROWS does not apply). */
  sized?(seed: number, range: DayRange, state: DataState): { rowCount: number; rows: RowGenerator };
  failure?: string;
}

const none: RowGenerator = () => [];

const DEFINITIONS: Definition[] = [
  {
    path: 'Sales/Orders.avw',
    description:
      'Sales orders: text with umlauts, quotes, commas and line breaks; exact decimals; integers beyond 2^53; ' +
      'FROM/TO (yyyy-mm-dd) filter "Erfasst Am"',
    defaultRows: 2_500,
    columns: SALES_COLUMNS,
    rows: (seed, _n, range) => salesRows(seed, range),
  },
  {
    path: 'Stock/Levels.avw',
    description: 'Stock levels: a small simple report',
    defaultRows: 40,
    columns: [
      { name: 'Artikel', kind: 'text' },
      { name: 'Lager', kind: 'text' },
      { name: 'Bestand', kind: 'integer' },
      { name: 'Stand', kind: 'timestamp' },
    ],
    rows: (seed) => stockRows(seed),
  },
  {
    path: 'Finance/Ledger.avx',
    description:
      'Ledger (an avx report: the extension must be given); digits-only text "Konto"; FROM/TO filter "Valuta"',
    defaultRows: 5_000,
    columns: [
      { name: 'Buchung Nr', kind: 'integer' },
      { name: 'Konto', kind: 'text' },
      { name: 'Soll', kind: 'decimal' },
      { name: 'Haben', kind: 'decimal' },
      { name: 'Valuta', kind: 'timestamp' },
      { name: 'Text', kind: 'text' },
    ],
    rows: (seed, _n, range) => ledgerRows(seed, range),
  },
  {
    path: 'Finance/Bookings.avw',
    description:
      'Bookings of the mandant, up to four per day of FROM/TO (yyyy-mm-dd) in "Buchungstag"; the data revision ' +
      '(/_sim/revision) corrects, adds and deletes bookings',
    defaultRows: 0,
    columns: [
      { name: 'Buchung Nr', kind: 'text' },
      { name: 'Buchungstag', kind: 'text' },
      { name: 'Betrag', kind: 'decimal' },
      { name: 'Text', kind: 'text' },
    ],
    rows: () => none,
    sized: (seed, range, state) => bookingRows(seed, range, state.mandant, state.revision),
  },
  {
    path: 'Drift.avw',
    description: 'Type drift: "Wert" holds integers in the first half of the rows, decimals in the second',
    defaultRows: 200,
    columns: [
      { name: 'Nr', kind: 'integer' },
      { name: 'Wert', kind: 'decimal' },
    ],
    rows: (seed, n) => driftRows(seed, n),
  },
  {
    path: 'Clash/Amounts.avw',
    description:
      'Two columns whose names differ only in letter case ("Amount" holds 100 + n, ' +
      '"amount" holds n): they clash after normalising',
    defaultRows: 20,
    columns: [
      { name: 'Nr', kind: 'integer' },
      { name: 'Amount', kind: 'integer' },
      { name: 'amount', kind: 'integer' },
    ],
    rows: () => (i) => [String(i + 1), String(101 + i), String(i + 1)],
  },
  {
    path: 'Clash/Amounts Reversed.avw',
    description: 'Clash/Amounts with its two clashing columns in the other order ("amount" first)',
    defaultRows: 20,
    columns: [
      { name: 'Nr', kind: 'integer' },
      { name: 'amount', kind: 'integer' },
      { name: 'Amount', kind: 'integer' },
    ],
    rows: () => (i) => [String(i + 1), String(i + 1), String(101 + i)],
  },
  {
    path: 'Clash/System Columns.avw',
    description: 'Columns named like PostgreSQL system columns (xmin, ctid, tableoid, cmin, cmax, xmax)',
    defaultRows: 5,
    columns: ['Nr', 'xmin', 'CTID', 'tableoid', 'cmin', 'cmax', 'xmax'].map((name) => ({ name, kind: 'integer' })),
    rows: () => (i) => [String(i + 1), ...[1, 2, 3, 4, 5, 6].map((k) => String(k * 10 + i))],
  },
  { path: 'Empty.avw', description: 'No rows at all', defaultRows: 0, columns: SIMPLE_COLUMNS, rows: () => none },
  {
    path: 'Failing.avw',
    description: 'Runs, then ends FinishedError with a multi-line message',
    defaultRows: 0,
    columns: SIMPLE_COLUMNS,
    rows: () => none,
    failure: FAILING_MESSAGE,
  },
  {
    path: 'Big.avw',
    description: 'One million sales order rows (the Sales/Orders columns)',
    defaultRows: 1_000_000,
    columns: SALES_COLUMNS,
    rows: (seed, _n, range) => salesRows(seed, range),
  },
  {
    path: 'Sub/Deep/Nested Report.avw',
    description: 'A name with a space, two sub folders deep',
    defaultRows: 25,
    columns: SIMPLE_COLUMNS,
    rows: (seed) => simpleRows(seed),
  },
];

/**
 * Every report the simulator knows (docs/report-export-service.md "What the service does" 1: reports are
 * pre-configured).
 */
export const CATALOGUE: ReadonlyArray<CatalogueEntry> = DEFINITIONS.map(({ path, description, defaultRows }) => ({
  path,
  description,
  defaultRows,
}));

const BY_PATH = new Map(DEFINITIONS.map((d) => [d.path, d]));

/** Whether the rows of the report at `path` follow the mandant and the data revision (DataState). */
export function followsState(path: string): boolean {
  return BY_PATH.get(path)?.sized !== undefined;
}

/** Most rows a ROWS parameter may ask for. */
export const MAX_ROWS = 50_000_000;

const DAY_MS = 86_400_000;

function parseDay(name: string, value: string): number | string {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  const ms = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : NaN;
  if (!m || Number.isNaN(ms) || isoUtc(ms).slice(0, 10) !== value) {
    return `Invalid value for parameter ${name}: '${value}' (expected yyyy-mm-dd)`;
  }
  return ms / DAY_MS;
}

function failed(columns: ReportColumn[], failure: string): ReportData {
  return { columns, rowCount: 0, row: () => [], cells: () => [], failure };
}

/**
 * A report given to the simulator besides its catalogue (SimulatorOptions.reports), e.g. a public dataset as test
 * data: its rows as canonical values (see {@link CanonicalValue}; a timestamp as ISO 8601 with offset).
 */
export interface ExtraReport {
  /** folders/name.ext, e.g. 'Real/Weather.avw'. */
  path: string;
  columns: ReportColumn[];
  /** Canonical values per row; `undefined` leaves the key out of the row in json (NULL in every other type). */
  rows: readonly (readonly (string | null | undefined)[])[];
}

/** The data of an extra report, the first `rowCount` rows (ROWS, default all). */
function extraReportData(report: ExtraReport, parameters: Record<string, string>): ReportData {
  const rows = report.rows;
  let rowCount = rows.length;
  if (parameters.ROWS !== undefined) {
    if (!/^\d{1,9}$/.test(parameters.ROWS))
      return failed(report.columns, `Invalid value for parameter ROWS: '${parameters.ROWS}' (expected 0..${rowCount})`);
    rowCount = Math.min(rowCount, Number(parameters.ROWS));
  }
  const timestampAt = report.columns.flatMap((c, i) => (c.kind === 'timestamp' ? [i] : []));
  return {
    columns: report.columns,
    rowCount,
    missingKeys: rows.some((r) => r.includes(undefined)),
    row: (index) => rows[index]!.map((v) => v ?? null),
    cells(index) {
      const cells: (Cell | undefined)[] = [...rows[index]!];
      for (const i of timestampAt) if (typeof cells[i] === 'string') cells[i] = Date.parse(cells[i] as string);
      return cells as Cell[];
    },
  };
}

/**
 * The rows a report returns.
 * @param path folders/name.ext with '/' separators, e.g. 'Sales/Orders.avw' (case-sensitive)
 * @param parameters the report's input parameters: ROWS (row count, any report), FROM and TO
 *   (yyyy-mm-dd, UTC days, [FROM, TO)) for the reports with a date column; others are ignored
 * @param seed data seed (SimulatorOptions.seed)
 * @param state the mandant the report runs in and the revision of the server's data (the reports that follow them)
 * @param extra the reports given besides the catalogue (SimulatorOptions.reports), by path; they win
 * @returns the data, with `failure` set when a parameter is invalid or the report fails;
 *   undefined when no such report exists
 */
export function reportData(
  path: string,
  parameters: Record<string, string>,
  seed: number,
  state: DataState = { mandant: '', revision: 0 },
  extra?: ReadonlyMap<string, ExtraReport>,
): ReportData | undefined {
  const given = extra?.get(path);
  if (given) return extraReportData(given, parameters);
  const def = BY_PATH.get(path);
  if (!def) return undefined;
  if (def.failure) return failed(def.columns, def.failure);
  let rowCount = def.defaultRows;
  if (parameters.ROWS !== undefined) {
    if (!/^\d{1,9}$/.test(parameters.ROWS) || Number(parameters.ROWS) > MAX_ROWS) {
      return failed(def.columns, `Invalid value for parameter ROWS: '${parameters.ROWS}' (expected 0..${MAX_ROWS})`);
    }
    rowCount = Number(parameters.ROWS);
  }
  let range = DEFAULT_RANGE;
  if (parameters.FROM !== undefined || parameters.TO !== undefined) {
    const from = parameters.FROM === undefined ? DEFAULT_RANGE.fromDay : parseDay('FROM', parameters.FROM);
    if (typeof from === 'string') return failed(def.columns, from);
    const to = parameters.TO === undefined ? from + DEFAULT_RANGE.days : parseDay('TO', parameters.TO);
    if (typeof to === 'string') return failed(def.columns, to);
    if (to <= from)
      return failed(def.columns, `Invalid parameters: FROM (${parameters.FROM}) must be before TO (${parameters.TO})`);
    range = { fromDay: from, days: to - from };
  }
  const sized = def.sized?.(seed >>> 0, range, state);
  if (sized) rowCount = sized.rowCount;
  const gen = sized?.rows ?? def.rows(seed >>> 0, rowCount, range);
  const timestampAt = def.columns.flatMap((c, i) => (c.kind === 'timestamp' ? [i] : []));
  return {
    columns: def.columns,
    rowCount,
    cells: gen,
    row(index) {
      const cells = gen(index);
      for (const i of timestampAt) {
        const v = cells[i];
        if (typeof v === 'number') cells[i] = isoUtc(v);
      }
      return cells as CanonicalValue[];
    },
  };
}
