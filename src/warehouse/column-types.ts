/**
 * Which PostgreSQL type a column gets (docs/loaded-tables.md "Types"): a declared type wins; an existing target's
 * type is kept; otherwise the type is inferred from the kinds of value the page decoder saw in the whole report
 * (not just the first page), so that integers on page 1 and decimals on page 3 give `numeric` on the first run.
 */
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
