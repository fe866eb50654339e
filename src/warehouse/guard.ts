/**
 * Guards of a target (docs/loaded-tables.md "Guards and schema changes"): a run that would load too few rows, or shrink
 * a replaced target by more than its job allows, fails with GUARD_TRIPPED before its rows reach the dashboards. The
 * verdict is a pure function of the figures; the caller counts the target's rows inside its load transaction, with the
 * target locked, so that the count is the one the load would replace.
 */
import { EtlError } from '../errors.ts';
import { shellQuote } from '../shell-quote.ts';
import type { WriteMode } from '../vocabulary.ts';
import { quoteTable, type TableName } from './identifiers.ts';
import { columnTypeOf, targetExists } from './target-table.ts';
import type { Queryable } from '../db.ts';
import { mandantCondition, type MandantScope } from './mandant-column.ts';

/** jobs.yaml `target.guard`, as written (both optional). */
export interface TargetGuard {
  minRows?: number | undefined;
  maxShrinkPercent?: number | undefined;
}

/** A guard that would trip: which, and the words that say so (what, where, how to go on). */
export interface GuardTrip {
  guard: 'minRows' | 'maxShrinkPercent';
  /**
   * What the guard found, e.g. `the report returned 0 rows and target.guard.minRows is 1 (the default for replace)`.
   */
  finding: string;
  /** The error's whole text: the finding, that the target is untouched, and how to go on. */
  message: string;
  details: {
    table: string;
    rows: number;
    minRows: number;
    currentRows?: number;
    maxShrinkPercent?: number;
    shrinkPercent?: number;
  };
}

/** The fewest rows a run of `mode` may load: `guard.minRows`, else 1 for replace (never empty a table), else 0. */
export function minRowsOf(mode: WriteMode, guard: TargetGuard): number {
  return guard.minRows ?? (mode === 'replace' ? 1 : 0);
}

/** Whether the guard needs the target's current row count (only maxShrinkPercent does; it is a full count). */
export function needsRowCount(mode: WriteMode, guard: TargetGuard): boolean {
  return mode === 'replace' && guard.maxShrinkPercent !== undefined;
}

/**
 * The words for a load that leaves no target: the report had no rows and no columns, so nothing says what to create
 * (docs/loaded-tables.md "Guards and schema changes").
 */
export function noTargetWords(table: string): string {
  return (
    `no table: the report had no rows and no columns, so ${table} was not created and does not exist (queries of it ` +
    'fail with "relation does not exist"; the first run whose report has columns creates it)'
  );
}

/**
 * The target's rows now (with `mandant`: the mandant's), or undefined when it does not exist yet. An exact
 * `count(*)`: call it only when {@link needsRowCount} says so, inside the load transaction after the target's lock.
 */
export async function countTargetRows(
  db: Queryable,
  t: TableName,
  mandant?: MandantScope,
): Promise<number | undefined> {
  if (!(await targetExists(db, t))) return undefined;
  if (mandant && (await columnTypeOf(db, t, mandant.column)) === undefined) return 0;
  const where = mandant ? ` WHERE ${mandantCondition(mandant, 1)}` : '';
  const { rows } = await db.query<{ n: string }>(
    `SELECT count(*) AS n FROM ${quoteTable(t)}${where}`,
    mandant ? [mandant.value] : [],
  );
  return Number(rows[0]!.n);
}

/**
 * Whether loading `rows` into `table` trips its guard.
 * @param o.rows rows the run loads (the server's rows= for typed rows, else the rows loaded)
 * @param o.currentRows the target's rows now (undefined: a new target, or not counted)
 * @param o.targetExists whether the target exists now (false: the message says no table exists, none is created)
 * @param o.runKey the run's key, for the replay command in the message
 * @returns the trip, or undefined when the load may go on
 */
export function guardTrip(o: {
  table: string;
  mode: WriteMode;
  guard: TargetGuard;
  rows: number;
  currentRows: number | undefined;
  targetExists?: boolean | undefined;
  runKey: string;
}): GuardTrip | undefined {
  const minRows = minRowsOf(o.mode, o.guard);
  // Never "left as it was" for a table that is not there: dashboards reading it get "relation does not exist".
  const untouched =
    o.targetExists === false ? `${o.table} does not exist, and no table was created` : `${o.table} is left as it was`;
  const goOn = `If the result is right, load it with "report-etl replay ${shellQuote(o.runKey)} --accept-guard"`;
  if (o.rows < minRows) {
    const byDefault = o.guard.minRows === undefined;
    const which = `target.guard.minRows is ${minRows}${byDefault ? ` (the default for ${o.mode})` : ''}`;
    const setting = byDefault ? ', or set target.guard.minRows: 0 where an empty result is normal' : '';
    const finding = `the report returned ${o.rows} row${o.rows === 1 ? '' : 's'} and ${which}`;
    return {
      guard: 'minRows',
      finding,
      message: `guard tripped: ${finding}: ${untouched}. ${goOn}${setting}.`,
      details: {
        table: o.table,
        rows: o.rows,
        minRows,
        ...(o.currentRows !== undefined ? { currentRows: o.currentRows } : {}),
      },
    };
  }
  const max = o.guard.maxShrinkPercent;
  const current = o.currentRows ?? 0;
  if (o.mode !== 'replace' || max === undefined || current === 0 || o.rows >= current) return undefined;
  const shrinkPercent = Math.round(((current - o.rows) / current) * 1000) / 10;
  if (shrinkPercent <= max) return undefined;
  const finding =
    `the report returned ${o.rows} rows where ${o.table} holds ${current}, ${shrinkPercent}% ` +
    `fewer, and target.guard.maxShrinkPercent is ${max}`;
  return {
    guard: 'maxShrinkPercent',
    finding,
    message: `guard tripped: ${finding}: ${untouched}. ${goOn}, or raise target.guard.maxShrinkPercent.`,
    details: { table: o.table, rows: o.rows, minRows, currentRows: current, maxShrinkPercent: max, shrinkPercent },
  };
}

/** A run stopped by its target's guard: not retryable (the same report gives the same rows), the target untouched. */
export class GuardTrippedError extends EtlError {
  constructor(trip: GuardTrip) {
    super('GUARD_TRIPPED', trip.message, {
      stage: 'load',
      retryable: false,
      details: { guard: trip.guard, ...trip.details },
    });
    this.name = 'GuardTrippedError';
  }
}
