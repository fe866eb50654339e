/**
 * Which target column each report column loads into (docs/loaded-tables.md "Column names"). A new target gets the names
 * of {@link normaliseColumnNames}, which depend on each report column's own name, never on the columns' order. The
 * original names are recorded with the target (`etl.target_columns`), and a load into an existing target maps its
 * report columns by them: a column once made for `Amount` keeps taking `Amount`, whatever else the report sends and in
 * whatever order. A target loaded before names were recorded is read the way it was made (clashes numbered in order of
 * appearance) the first time, and recorded so from then on.
 */
import type { Queryable } from '../db.ts';
import {
  clashSuffixed,
  normaliseColumnName,
  normaliseColumnNames,
  orderedColumnNames,
  type TableName,
} from './identifiers.ts';
import type { TargetColumn } from './target-table.ts';

/** Report column name → target column, as recorded for a target. */
export type RecordedNames = ReadonlyMap<string, string>;

/**
 * The recorded original names of an existing target's columns (those whose column still exists), or an empty map
 * for a new target or one loaded before names were recorded.
 */
export async function recordedColumnNames(
  db: Queryable,
  target: TableName,
  existing: readonly TargetColumn[] | undefined,
): Promise<RecordedNames> {
  if (!existing) return new Map();
  const { rows } = await db.query<{ report_column: string; column_name: string }>(
    'SELECT report_column, column_name FROM etl.target_columns WHERE target_table = $1',
    [`${target.schema}.${target.table}`],
  );
  const have = new Set(existing.map((c) => c.name));
  return new Map(rows.filter((r) => have.has(r.column_name)).map((r) => [r.report_column, r.column_name]));
}

/** The target columns of a report's columns, and the pairs to record. */
export interface ColumnNaming {
  /** Target column per report column, in the report's order. */
  names: string[];
  /** (report column, target column) pairs not recorded yet. */
  toRecord: [string, string][];
}

/**
 * Maps a report's columns to the target's (docs/loaded-tables.md "Column names"): by the recorded original names first;
 * a report column without one gets its normalised name, or, when another report column's recorded column has that name,
 * the name suffixed from its own original name. A target without any recorded names that exists already is read as it
 * was made (clashes numbered in order), where those columns exist.
 * @param raw the report's column names as sent
 * @param existing the target's columns, or undefined for a new target
 */
export function nameTargetColumns(
  raw: readonly string[],
  existing: readonly TargetColumn[] | undefined,
  recorded: RecordedNames,
): ColumnNaming {
  const stable = normaliseColumnNames(raw);
  if (!existing) return { names: stable, toRecord: raw.map((r, i) => [r, stable[i]!]) };
  let known = recorded;
  if (known.size === 0) {
    const have = new Set(existing.map((c) => c.name));
    const ordered = orderedColumnNames(raw);
    known = new Map(raw.flatMap((r, i) => (have.has(ordered[i]!) ? [[r, ordered[i]!] as const] : [])));
  }
  const ownedByOthers = (name: string, r: string) =>
    [...known].some(([other, column]) => column === name && other !== r);
  const used = new Set<string>();
  const names = raw.map((r, i) => {
    let name = known.get(r);
    if (name === undefined || used.has(name)) {
      name = stable[i]!;
      if (used.has(name) || ownedByOthers(name, r)) name = clashSuffixed(normaliseColumnName(r) || name, r);
      for (let n = 2, base = name; used.has(name) || ownedByOthers(name, r); n++) name = `${base.slice(0, 60)}_${n}`;
    }
    used.add(name);
    return name;
  });
  // A name the report repeats is recorded for its first column only.
  const toRecord = raw.flatMap((r, i) =>
    recorded.get(r) === names[i] || raw.indexOf(r) !== i ? [] : [[r, names[i]!] as [string, string]],
  );
  return { names, toRecord };
}

/**
 * Records which report column each target column was made for, inside the load transaction.
 * @param fresh the target was created by this load: earlier records of a table of the same name are dropped first
 */
export async function recordColumnNames(
  db: Queryable,
  target: TableName,
  pairs: readonly [string, string][],
  fresh: boolean,
): Promise<void> {
  const table = `${target.schema}.${target.table}`;
  if (fresh) await db.query('DELETE FROM etl.target_columns WHERE target_table = $1', [table]);
  if (pairs.length === 0) return;
  await db.query(
    `INSERT INTO etl.target_columns (target_table, report_column, column_name)
     SELECT $1, r, c FROM unnest($2::text[], $3::text[]) AS u(r, c)
     ON CONFLICT (target_table, report_column) DO UPDATE SET column_name = EXCLUDED.column_name, recorded_at = now()`,
    [table, pairs.map((p) => p[0]), pairs.map((p) => p[1])],
  );
}
