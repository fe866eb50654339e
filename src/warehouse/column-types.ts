/**
 * Which PostgreSQL type a column gets (docs/loaded-tables.md "Types"): a declared type wins; an existing target's
 * type is kept; otherwise the type is inferred from the kinds of value the page decoder saw in the whole report
 * (not just the first page), so that integers on page 1 and decimals on page 3 give `numeric` on the first run.
 */
import type { Queryable } from '../db.ts';
import { quoteIdent } from './identifiers.ts';
import { KIND } from './row-source.ts';

/**
 * The type for a column from the OR of its {@link KIND} bits.
 * Numbers are digit-exact: integers that fit int64 → bigint, any decimal or larger integer → numeric (never a
 * float). Timestamps → timestamptz, ISO dates → date (dates mixed with timestamps: text). Booleans → boolean.
 * JSON objects/arrays → jsonb. Anything mixed with text, or a column with no non-null value → text.
 */
export function inferColumnType(kinds: number): string {
  if (kinds === 0) return 'text';
  if (kinds & KIND.text) return 'text';
  if (kinds === KIND.json) return 'jsonb';
  if (kinds === KIND.boolean) return 'boolean';
  if (kinds === KIND.timestamp) return 'timestamptz';
  if (kinds === KIND.date) return 'date';
  if (kinds === KIND.integer) return 'bigint';
  if ((kinds & ~(KIND.integer | KIND.numeric)) === 0) return 'numeric';
  return 'text';
}

/**
 * Whether column `name` (text) of `table` holds a time without offset that the load's zone skips (a spring-forward
 * hour): timestamptz would read it as a later time, so an inferred column stays text (docs/loaded-tables.md "Types").
 * Compares each such value read as a local time with the same value read through the zone (one scan, new columns).
 */
export async function holdsSkippedTime(db: Queryable, table: string, name: string): Promise<boolean> {
  const c = quoteIdent(name);
  const { rows } = await db.query(
    `SELECT 1 FROM ${table} WHERE ${c} !~ '([Zz]|[+-][0-9]{2}(:?[0-9]{2})?)$' ` +
      `AND ${c}::timestamptz::timestamp <> ${c}::timestamp LIMIT 1`,
  );
  return rows.length > 0;
}
