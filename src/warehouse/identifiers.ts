/**
 * Postgres identifiers: report column names normalised to snake_case (docs/loaded-tables.md "Column names") and quoting
 * that no report column or config value can break out of.
 */
import { createHash } from 'node:crypto';
import { EtlError } from '../errors.ts';

/**
 * The longest identifier PostgreSQL keeps, in bytes (NAMEDATALEN - 1): a longer one is cut to 63 bytes without an
 * error, so two names that differ after byte 63 would name one table (docs/loaded-tables.md "Target names").
 */
export const MAX_IDENT_BYTES = 63;

/** Bytes of `name` in UTF-8, as PostgreSQL measures an identifier against {@link MAX_IDENT_BYTES}. */
export function identifierBytes(name: string): number {
  return Buffer.byteLength(name, 'utf8');
}

const UMLAUTS: Record<string, string> = { ä: 'ae', ö: 'oe', ü: 'ue', ß: 'ss' };
/** Names PostgreSQL keeps for every table's system columns: no user column may have them. */
const SYSTEM_COLUMNS = new Set(['tableoid', 'xmin', 'cmin', 'xmax', 'cmax', 'ctid']);

/**
 * Normalises one report column name: lower case, German umlauts transliterated (ä→ae, ö→oe, ü→ue, ß→ss),
 * every run of characters other than a-z and 0-9 becomes `_`, trimmed of `_`, a leading digit gets `_`.
 * `Menge Stk` → `menge_stk`, `Größe (cm)` → `groesse_cm`, `1. Quartal` → `_1_quartal`.
 * Names longer than 63 bytes are cut and given a short hash so two long names stay distinct; a PostgreSQL system
 * column's name (xmin, ctid, …) gets a trailing `_`.
 * @returns the normalised name, or `''` when nothing is left (the caller names such columns by position)
 */
export function normaliseColumnName(raw: string): string {
  let name = raw
    .toLowerCase()
    .replace(/[äöüß]/g, (c) => UMLAUTS[c]!)
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  if (/^[0-9]/.test(name)) name = `_${name}`;
  if (SYSTEM_COLUMNS.has(name)) name = `${name}_`;
  if (name.length > MAX_IDENT_BYTES) {
    const hash = createHash('sha256').update(raw).digest('hex').slice(0, 8);
    name = `${name.slice(0, MAX_IDENT_BYTES - 9)}_${hash}`;
  }
  return name;
}

/**
 * Normalises every column name of a report, keeping them distinct, so that each name depends on the report
 * column's own name and never on the order of the columns (docs/loaded-tables.md "Column names"):
 * - a name that is the only one to normalise to its result gets that result (`Menge Stk` → `menge_stk`);
 * - names that clash after normalising: the one already written exactly so keeps it, every other gets a suffix
 *   from its own original name, `_` + the first 6 hex digits of the SHA-256 of its UTF-8 bytes
 *   (`Amount` beside `amount` → `amount_` + 6 hex digits, whichever comes first);
 * - a name with nothing left becomes `column_<n>` (1-based position: there is no name to go by), and a report
 *   that repeats the very same name numbers the repeats `_2`, `_3` in order (they cannot be told apart).
 * @returns names in the same order as `raw`
 */
export function normaliseColumnNames(raw: readonly string[]): string[] {
  const bases = raw.map((r, i) => normaliseColumnName(r) || `column_${i + 1}`);
  // The distinct original names behind each normalised name: the very same name twice is no clash of names.
  const originals = new Map<string, Set<string>>();
  bases.forEach((b, i) => originals.set(b, (originals.get(b) ?? new Set()).add(raw[i]!)));
  const wanted = bases.map((b, i) => (originals.get(b)!.size > 1 && raw[i] !== b ? clashSuffixed(b, raw[i]!) : b));
  return distinct(wanted);
}

/**
 * The name of a report column whose normalised name `base` is taken by another column: `base` cut to fit, `_`,
 * and the first 6 hex digits of the SHA-256 of the original name (docs/loaded-tables.md "Column names").
 */
export function clashSuffixed(base: string, raw: string): string {
  const hash = createHash('sha256').update(raw).digest('hex').slice(0, 6);
  return `${base.slice(0, MAX_IDENT_BYTES - 7)}_${hash}`;
}

/**
 * The names report-etl gave before they depended on the name alone: clashes numbered `_2`, `_3` in order of
 * appearance. Only to recognise the columns of a table loaded then (column-names.ts).
 */
export function orderedColumnNames(raw: readonly string[]): string[] {
  return distinct(raw.map((r, i) => normaliseColumnName(r) || `column_${i + 1}`));
}

/** `names` with each repeat of an earlier one numbered `_2`, `_3`, ... (cut to fit 63 bytes). */
function distinct(names: readonly string[]): string[] {
  const taken = new Set<string>();
  return names.map((base) => {
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base.slice(0, MAX_IDENT_BYTES - String(n).length - 1)}_${n}`;
    taken.add(name);
    return name;
  });
}

/** Quotes an identifier for SQL: `"` + name with `"` doubled + `"`. Safe for any string without NUL. */
export function quoteIdent(name: string): string {
  if (name.includes('\0')) throw new EtlError('TARGET_INVALID', 'identifier contains a NUL character');
  return `"${name.replaceAll('"', '""')}"`;
}

/** A schema-qualified table name. */
export interface TableName {
  schema: string;
  table: string;
}

/**
 * Splits `schema.table` (schema `public` when absent). Both parts must be plain identifiers (letters, digits,
 * underscore; not starting with a digit) — the config schema checks the same.
 * @throws EtlError TARGET_INVALID naming the value
 */
export function parseTableName(qualified: string): TableName {
  const m = /^(?:([A-Za-z_][A-Za-z0-9_]*)\.)?([A-Za-z_][A-Za-z0-9_]*)$/.exec(qualified);
  if (!m) {
    throw new EtlError(
      'TARGET_INVALID',
      `target table "${qualified}" is not schema.table (letters, digits, underscore)`,
      { retryable: false },
    );
  }
  return { schema: m[1] ?? 'public', table: m[2]! };
}

/** `"schema"."table"` for SQL. */
export function quoteTable(t: TableName): string {
  return `${quoteIdent(t.schema)}.${quoteIdent(t.table)}`;
}
