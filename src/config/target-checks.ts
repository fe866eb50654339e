/**
 * The checks of `target` zod cannot express (docs/loaded-tables.md "Target names"): names normalised and within
 * PostgreSQL's 63 bytes; with `report-etl validate`'s catalogue, names against an existing target; and jobs that share
 * a target agreeing on write mode and key. Each problem's path is below `jobs.<name>`, so that isolation skips that
 * job.
 */
import { closestMatch } from '../closest-match.ts';
import {
  identifierBytes,
  MAX_IDENT_BYTES,
  normaliseColumnName,
  parseTableName,
  type TableName,
} from '../warehouse/identifiers.ts';
import { isLoadableRelkind, type ExistingRelation } from '../warehouse/target-table.ts';
import type { ConfigPath } from './interpolate.ts';
import { renderSample, templateProblems } from './time-template.ts';
import { isObj } from './problems.ts';
import { targetSchema, type EtlConfig } from './schema.ts';

/** What PostgreSQL holds under the target names, by `schema.table`; an absent name does not exist yet. */
export type TargetCatalogue = ReadonlyMap<string, ExistingRelation>;

/** One problem of a job's target; `onKey`: positioned on the map key (a name under `target.columns`). */
export type TargetProblem = { path: ConfigPath; text: string; onKey?: boolean };

/** The target of a `target.table` value, schema defaulted to public; undefined when it is no valid name. */
export function qualifiedTarget(table: unknown): TableName | undefined {
  if (typeof table !== 'string') return undefined;
  try {
    return parseTableName(table);
  } catch {
    return undefined;
  }
}

const RELKINDS: Record<string, string> = {
  v: 'view',
  m: 'materialized view',
  f: 'foreign table',
  S: 'sequence',
  i: 'index',
  I: 'index',
  c: 'composite type',
};

const COLUMN_NAMES = 'docs/loaded-tables.md "Column names"';
const TARGET_NAMES = 'docs/loaded-tables.md "Target names"';

/** What is wrong with a column name in jobs.yaml, unless it is a normalised name PostgreSQL keeps whole. */
function columnNameProblem(name: string): string | undefined {
  const bytes = identifierBytes(name);
  if (bytes > MAX_IDENT_BYTES)
    return (
      `"${name}" is ${bytes} bytes, longer than PostgreSQL's limit of ${MAX_IDENT_BYTES} bytes for a name: a ` +
      `report column with a longer name is loaded as its first ${MAX_IDENT_BYTES - 9} characters and a short hash ` +
      `(${TARGET_NAMES}); write that name (\`report-etl preview\` shows it)`
    );
  const normalised = normaliseColumnName(name);
  if (normalised === name) return undefined;
  if (normalised === `${name}_`)
    return (
      `"${name}" is the name of a PostgreSQL system column: a report column of that name loads as "${normalised}" ` +
      `(${COLUMN_NAMES})`
    );
  if (normalised === '')
    return (
      `"${name}" is not a column name: it has no letter or digit; write the normalised name of a report column ` +
      `(${COLUMN_NAMES})`
    );
  return (
    `"${name}" is not a normalised column name: did you mean "${normalised}"? (report columns are loaded lower ` +
    `case, umlauts as ae oe ue ss, every other run of characters as _; ${COLUMN_NAMES})`
  );
}

const listed = (cs: readonly string[]) =>
  cs.length > 40 ? `${cs.slice(0, 40).join(', ')}, …` : cs.join(', ') || 'none';

/**
 * The problems of one job's raw `target`: names too long or not normalised, and with `catalogue` knowing the
 * target: a relation that is not a table, key columns it lacks, a merge key no unique index serves, and declared
 * columns it lacks that look like a typo (others may be new columns: {@link targetWarnings}).
 * @param mandantColumn a job with many mandants: its mandant column, which completes a merge's unique key
 *   (docs/loaded-tables.md "Many mandants")
 * @returns problems with paths relative to the job (`['target', 'key', 0]`)
 */
export function jobTargetProblems(
  target: unknown,
  catalogue: TargetCatalogue | undefined,
  mandantColumn?: string,
): TargetProblem[] {
  const out: TargetProblem[] = [];
  if (!isObj(target)) return out;
  const t = qualifiedTarget(target.table);
  for (const what of t ? (['schema', 'table'] as const) : []) {
    const part = t![what];
    const bytes = identifierBytes(part);
    if (bytes > MAX_IDENT_BYTES)
      out.push({
        path: ['target', 'table'],
        text:
          `${what} name "${part}" is ${bytes} bytes, longer than PostgreSQL's limit of ${MAX_IDENT_BYTES} bytes for ` +
          'a name: PostgreSQL would cut it, so two long names could load into one table; choose a name of at most ' +
          `${MAX_IDENT_BYTES} bytes`,
      });
  }
  const name = t && `${t.schema}.${t.table}`;
  const existing = name ? catalogue?.get(name) : undefined;
  if (existing && !isLoadableRelkind(existing.relkind)) {
    const kind = RELKINDS[existing.relkind] ?? `relation of kind ${existing.relkind}`;
    out.push({
      path: ['target', 'table'],
      text:
        `${name} exists in PostgreSQL as a ${kind}, not a table: report-etl loads into tables only; ` +
        'choose another target table',
    });
  }
  const columns = existing && isLoadableRelkind(existing.relkind) ? existing.columns : undefined;
  const key = Array.isArray(target.key) ? target.key : [];
  key.forEach((k, i) => {
    if (typeof k !== 'string' || k === '') return;
    const problem = columnNameProblem(k);
    if (problem) out.push({ path: ['target', 'key', i], text: problem });
    else if (columns && !columns.includes(k)) {
      const near = closestMatch(k, columns);
      out.push({
        path: ['target', 'key', i],
        text:
          `the target ${name} has no column ${k}${near ? ` (did you mean "${near}"?)` : ''}: a merge key must be a ` +
          `column of the target, with a unique index on the key (its columns: ${listed(columns)})`,
      });
    }
  });
  // A merge finds the rows it updates by a unique index on exactly the key (ON CONFLICT): without one every run
  // would fail in its load, after the server rendered the report.
  const keys = key.filter((k): k is string => typeof k === 'string' && k !== '');
  if (target.mode === 'merge' && existing && columns && keys.length > 0 && keys.every((k) => columns.includes(k))) {
    const unique = mandantColumn ? [...keys, mandantColumn] : keys;
    const wanted = [...new Set(unique)].sort().join('\0');
    if (!existing.uniqueKeys.some((u) => u.join('\0') === wanted))
      out.push({
        path: ['target', 'key'],
        text:
          `the target ${name} has no primary key or unique index on (${unique.join(', ')}): a merge finds the rows ` +
          `it updates by one, so every run would fail; add it: CREATE UNIQUE INDEX ON ${name} (${unique.join(', ')})`,
      });
  }
  out.push(...replaceRangeProblems(target, columns, name));
  for (const c of isObj(target.columns) ? Object.keys(target.columns) : []) {
    const path = ['target', 'columns', c];
    const problem = columnNameProblem(c);
    const near = !problem && columns && !columns.includes(c) ? closestMatch(c, columns) : undefined;
    if (problem) out.push({ path, text: problem, onKey: true });
    else if (near)
      out.push({
        path,
        text:
          `the target ${name} has no column ${c} (did you mean "${near}"?): a declared type applies only to a ` +
          `column of that name (its columns: ${listed(columns!)})`,
        onKey: true,
      });
  }
  return out;
}

const RANGE_SECTION = 'docs/loaded-tables.md "Replacing one period"';

/**
 * What a declared type makes of a bound rendered for a sample time: undefined when it reads it, else why not. Types
 * that cannot order a period (boolean, jsonb, bytea …) hold no range.
 */
function boundProblem(type: string, sample: string): string | undefined {
  const t = type.trim().toLowerCase();
  if (/^(text|varchar|character varying|char|character)\b/.test(t)) return undefined;
  if (/^date$/.test(t))
    return /^\d{4}-\d{2}-\d{2}([T ]|$)/.test(sample) ? undefined : `"${sample}" is not a date (yyyy-MM-dd)`;
  if (/^timestamp|^timestamptz$/.test(t))
    return /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}.*)?$/.test(sample) ? undefined : `"${sample}" is not a timestamp`;
  if (/^(bigint|integer|int|int[248]|smallint|numeric|decimal)\b/.test(t))
    return /^-?\d+(\.\d+)?$/.test(sample) ? undefined : `"${sample}" is not a number`;
  return `type ${type} cannot order a period: declare date, timestamptz, a number or text`;
}

/**
 * The problems of `target.replaceRange`: a column name that is not normalised, templates that do not render, with the
 * catalogue a column an existing target lacks without a declared type, and a declared type the bounds do not fit.
 */
function replaceRangeProblems(
  target: Record<string, unknown>,
  columns: readonly string[] | undefined,
  table: string | undefined,
): TargetProblem[] {
  const range = target.replaceRange;
  if (!isObj(range)) return [];
  const out: TargetProblem[] = [];
  const column = typeof range.column === 'string' && range.column !== '' ? range.column : undefined;
  const columnProblem = column && columnNameProblem(column);
  if (columnProblem) out.push({ path: ['target', 'replaceRange', 'column'], text: columnProblem });
  const rendered: Partial<Record<'from' | 'to', string>> = {};
  for (const bound of ['from', 'to'] as const) {
    const value = range[bound];
    if (typeof value !== 'string') continue;
    const problems = templateProblems(value);
    for (const text of problems) out.push({ path: ['target', 'replaceRange', bound], text });
    if (problems.length === 0) rendered[bound] = renderSample(value);
  }
  if (!column || columnProblem) return out;
  const declared = isObj(target.columns) ? target.columns[column] : undefined;
  if (typeof declared === 'string') {
    for (const bound of ['from', 'to'] as const) {
      const sample = rendered[bound];
      const problem = sample === undefined ? undefined : boundProblem(declared, sample);
      if (problem)
        out.push({
          path: ['target', 'replaceRange', bound],
          text:
            `the range column ${column} is declared ${declared}, but ${bound} renders as ${problem}: give the ` +
            `template a format the type reads, e.g. "%{logicalEnd:yyyy-MM-dd}" for a date (${RANGE_SECTION})`,
        });
    }
  } else if (columns && !columns.includes(column)) {
    const near = closestMatch(column, columns);
    out.push({
      path: ['target', 'replaceRange', 'column'],
      text:
        `the target ${table} has no column ${column}${near ? ` (did you mean "${near}"?)` : ''}: the range column ` +
        `must be a column of the report and of the target, or declared under target.columns with its type ` +
        `(${RANGE_SECTION})`,
    });
  }
  return out;
}

/** A job's write into a table, with the schema's defaults applied. */
type TargetWrite = { job: string; mode: string; key: string[] };

/** `mode merge, key [a, b]` / `mode replace`. */
const describeWrite = (w: TargetWrite) => `mode ${w.mode}${w.mode === 'merge' ? `, key [${w.key.join(', ')}]` : ''}`;
/** Same mode and key columns, in any order (a unique index serves the key whatever the order). */
const sameWrite = (a: TargetWrite, b: TargetWrite) =>
  a.mode === b.mode && [...a.key].sort().join('\0') === [...b.key].sort().join('\0');

/** The jobs writing each target table (`schema.table`), of those whose target validates. */
function writesByTable(jobs: unknown): Map<string, TargetWrite[]> {
  const by = new Map<string, TargetWrite[]>();
  for (const [job, value] of Object.entries(isObj(jobs) ? jobs : {})) {
    const parsed = targetSchema.safeParse(isObj(value) ? value.target : undefined);
    const t = parsed.success ? qualifiedTarget(parsed.data.table) : undefined;
    if (!parsed.success || !t) continue;
    const name = `${t.schema}.${t.table}`;
    (by.get(name) ?? by.set(name, []).get(name)!).push({ job, mode: parsed.data.mode, key: parsed.data.key });
  }
  return by;
}

/**
 * Jobs that write one table with different modes or merge keys, whose runs would undo each other's: each gets a
 * problem naming the others, since the file cannot tell which is meant (isolate.ts may keep a running one).
 * @param jobs the raw `jobs` map
 */
export function sharedTargetProblems(jobs: unknown): (TargetProblem & { job: string })[] {
  const out: (TargetProblem & { job: string })[] = [];
  for (const [table, writes] of writesByTable(jobs)) {
    for (const w of writes) {
      const others = writes.filter((o) => o !== w && !sameWrite(o, w));
      if (others.length === 0) continue;
      const named = others.map((o) => `job "${o.job}" (${describeWrite(o)})`).join(' and ');
      out.push({
        job: w.job,
        path: ['target', 'table'],
        text:
          `${table} is also the target of ${named}, but this job writes it with ${describeWrite(w)}: jobs that ` +
          "share a target table must use the same write mode and merge key, or the runs of one undo the other's " +
          `(${TARGET_NAMES}); give one of them its own table`,
      });
    }
  }
  return out;
}

/**
 * What a valid config's targets allow but is probably wrong (`validate` prints it and exits 0): jobs writing one
 * table alike, and with the catalogue a declared column an existing target lacks that resembles none of its columns.
 */
export function targetWarnings(cfg: EtlConfig, file: string, catalogue: TargetCatalogue | undefined): string[] {
  const out: string[] = [];
  for (const [table, writes] of writesByTable(cfg.jobs)) {
    if (writes.length < 2 || !writes.every((w) => sameWrite(w, writes[0]!))) continue;
    const first = writes[0]!;
    const consequence =
      first.mode === 'replace'
        ? 'each run replaces the rows the others loaded'
        : first.mode === 'append'
          ? 'their rows are mixed in one table'
          : `their rows with the same key [${first.key.join(', ')}] overwrite each other`;
    const names = writes.map((w) => `"${w.job}"`);
    const all = names.length === 2 ? 'both' : 'all';
    out.push(
      `${file}: jobs.${first.job}.target.table: ${table} is the target of jobs ${names.slice(0, -1).join(', ')} ` +
        `and ${names[names.length - 1]}, ${all} with ${describeWrite(first)}: allowed, but ${consequence}, and ` +
        'the table gets the columns of every one of their reports; give each job its own table unless that is meant',
    );
  }
  for (const [job, j] of Object.entries(cfg.jobs)) {
    const t = qualifiedTarget(j.target.table);
    const existing = t && catalogue?.get(`${t.schema}.${t.table}`);
    if (!existing || !isLoadableRelkind(existing.relkind)) continue;
    for (const c of Object.keys(j.target.columns)) {
      if (existing.columns.includes(c) || closestMatch(c, existing.columns)) continue;
      out.push(
        `${file}: jobs.${job}.target.columns.${c}: the target ${t.schema}.${t.table} has no column ${c} yet: its ` +
          `declared type applies only when the report brings a new column ${c}, and a run whose report has no such ` +
          `column fails; if it is a typo, fix it (the target's columns: ${existing.columns.join(', ') || 'none'})`,
      );
    }
  }
  return out;
}
