/**
 * The checks of `target` that the zod schema cannot express (README "Loaded tables", "Commands" `validate`):
 * - names: `target.key` and the names under `target.columns` are normalised column names, and every name (schema,
 *   table, column) fits PostgreSQL's 63 bytes, which would otherwise cut it without a word;
 * - existing targets: when `report-etl validate` could read PostgreSQL's catalogue, the same names are checked against
 *   the columns of a target that exists (a target that does not exist yet is checked at its first run, by the load);
 * - shared targets: jobs that write one table must agree on the write mode and the merge key.
 * Each problem carries its YAML path below `jobs.<name>`, so that isolation (isolate.ts) skips the job it is about.
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
import { targetSchema, type EtlConfig } from './schema.ts';

/**
 * What PostgreSQL holds under the target names of a jobs.yaml, read by `report-etl validate`: `schema.table` → the
 * relation; a name that is absent does not exist (yet).
 */
export type TargetCatalogue = ReadonlyMap<string, ExistingRelation>;

/** One problem of a job's target: its path below `jobs.<name>`, what is wrong and how to fix it. */
export interface TargetProblem {
  path: ConfigPath;
  text: string;
  /** Positioned on the map key rather than its value (a name under `target.columns`). */
  onKey?: boolean;
}

const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The target of a `target.table` value, its schema defaulted to public; undefined when it is no valid name. */
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

/** What is wrong with a column name as jobs.yaml gives it, or undefined when it is a normalised name PostgreSQL keeps whole. */
function columnNameProblem(name: string): string | undefined {
  const bytes = identifierBytes(name);
  if (bytes > MAX_IDENT_BYTES) {
    return (
      `"${name}" is ${bytes} bytes, longer than PostgreSQL's limit of ${MAX_IDENT_BYTES} bytes for a name: ` +
      `a report column with a longer name is loaded as its first ${MAX_IDENT_BYTES - 9} characters and a short hash (README "Loaded tables"); write that name (\`report-etl preview\` shows it)`
    );
  }
  const normalised = normaliseColumnName(name);
  if (normalised === name) return undefined;
  if (normalised === `${name}_`)
    return `"${name}" is the name of a PostgreSQL system column: a report column of that name loads as "${normalised}" (README "Loaded tables")`;
  if (normalised === '')
    return `"${name}" is not a column name: it has no letter or digit; write the normalised name of a report column (README "Loaded tables")`;
  return `"${name}" is not a normalised column name: did you mean "${normalised}"? (report columns are loaded lower case, umlauts as ae oe ue ss, every other run of characters as _; README "Loaded tables")`;
}

/**
 * The problems of one job's `target` (the raw, interpolated data): names too long for PostgreSQL, key and column
 * names that are not normalised, and — when `catalogue` knows the target — a relation that is not a table, key
 * columns it lacks, a merge key no unique index of it serves, and declared columns it lacks that look like a typo of one it has (one it lacks that looks like
 * nothing may be a column the report is about to bring: {@link targetWarnings}).
 * @returns problems with paths relative to the job (`['target', 'key', 0]`)
 */
export function jobTargetProblems(target: unknown, catalogue: TargetCatalogue | undefined): TargetProblem[] {
  const out: TargetProblem[] = [];
  if (!isObj(target)) return out;
  const t = qualifiedTarget(target.table);
  if (t) {
    for (const [what, part] of [
      ['schema', t.schema],
      ['table', t.table],
    ] as const) {
      const bytes = identifierBytes(part);
      if (bytes > MAX_IDENT_BYTES) {
        out.push({
          path: ['target', 'table'],
          text: `${what} name "${part}" is ${bytes} bytes, longer than PostgreSQL's limit of ${MAX_IDENT_BYTES} bytes for a name: PostgreSQL would cut it, so two long names could load into one table; choose a name of at most ${MAX_IDENT_BYTES} bytes`,
        });
      }
    }
  }
  const name = t && `${t.schema}.${t.table}`;
  const existing = name ? catalogue?.get(name) : undefined;
  if (existing && !isLoadableRelkind(existing.relkind)) {
    out.push({
      path: ['target', 'table'],
      text: `${name} exists in PostgreSQL as a ${RELKINDS[existing.relkind] ?? `relation of kind ${existing.relkind}`}, not a table: report-etl loads into tables only; choose another target table`,
    });
  }
  const columns = existing && isLoadableRelkind(existing.relkind) ? existing.columns : undefined;
  const listed = (cs: readonly string[]) =>
    cs.length > 40 ? `${cs.slice(0, 40).join(', ')}, …` : cs.join(', ') || 'none';
  if (Array.isArray(target.key)) {
    target.key.forEach((k, i) => {
      if (typeof k !== 'string' || k === '') return;
      const problem = columnNameProblem(k);
      if (problem) out.push({ path: ['target', 'key', i], text: problem });
      else if (columns && !columns.includes(k)) {
        const near = closestMatch(k, columns);
        out.push({
          path: ['target', 'key', i],
          text: `the target ${name} has no column ${k}${near ? ` (did you mean "${near}"?)` : ''}: a merge key must be a column of the target, with a unique index on the key (its columns: ${listed(columns)})`,
        });
      }
    });
  }
  // A merge into an existing table finds the rows it updates by a unique index on exactly the key (ON CONFLICT): without
  // one, every run would fail in its load stage, after the server rendered the report.
  const key = Array.isArray(target.key) ? target.key.filter((k): k is string => typeof k === 'string' && k !== '') : [];
  if (target.mode === 'merge' && existing && columns && key.length > 0 && key.every((k) => columns.includes(k))) {
    const wanted = [...new Set(key)].sort().join('\0');
    if (!existing.uniqueKeys.some((u) => u.join('\0') === wanted)) {
      out.push({
        path: ['target', 'key'],
        text: `the target ${name} has no primary key or unique index on (${key.join(', ')}): a merge finds the rows it updates by one, so every run would fail; add it: CREATE UNIQUE INDEX ON ${name} (${key.join(', ')})`,
      });
    }
  }
  if (isObj(target.columns)) {
    for (const c of Object.keys(target.columns)) {
      const problem = columnNameProblem(c);
      if (problem) {
        out.push({ path: ['target', 'columns', c], text: problem, onKey: true });
        continue;
      }
      const near = columns && !columns.includes(c) ? closestMatch(c, columns) : undefined;
      if (near) {
        out.push({
          path: ['target', 'columns', c],
          text: `the target ${name} has no column ${c} (did you mean "${near}"?): a declared type applies only to a column of that name (its columns: ${listed(columns!)})`,
          onKey: true,
        });
      }
    }
  }
  return out;
}

/** A job's write into a table, with the schema's defaults applied. */
interface TargetWrite {
  job: string;
  mode: string;
  key: string[];
}

/** `mode merge, key [a, b]` / `mode replace`. */
const describeWrite = (w: TargetWrite) => `mode ${w.mode}${w.mode === 'merge' ? `, key [${w.key.join(', ')}]` : ''}`;
/** Same mode and the same key columns (in any order: a unique index serves the key whatever the order). */
const sameWrite = (a: TargetWrite, b: TargetWrite) =>
  a.mode === b.mode && [...a.key].sort().join('\0') === [...b.key].sort().join('\0');

/** The jobs writing each target table (`schema.table`, schema defaulted), of those whose target validates. */
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
 * Jobs that write one target table with different write modes or merge keys: one job's runs would undo the other's
 * (a replace removes what a merge kept, a merge by another key finds no unique index). Each such job gets a problem
 * naming the others, so that isolation skips every one of them: which one is meant cannot be told from the file
 * (a live reload keeps one that was running and is written as before, isolate.ts).
 * @param jobs the raw `jobs` map
 * @returns problems with their job name and the path below it (`['target', 'table']`)
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
        text: `${table} is also the target of ${named}, but this job writes it with ${describeWrite(w)}: jobs that share a target table must use the same write mode and merge key, or the runs of one undo the other's (README "Loaded tables"); give one of them its own table`,
      });
    }
  }
  return out;
}

/**
 * What is allowed but probably wrong in the targets of a valid config, one line each (`validate` prints them and
 * exits 0): several jobs writing one table alike, and — with the catalogue — a declared column an existing target
 * lacks that resembles none of its columns (the declared type applies when the report brings that column; a run
 * whose report does not have it fails).
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
    const jobs = `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}, ${names.length === 2 ? 'both' : 'all'}`;
    out.push(
      `${file}: jobs.${first.job}.target.table: ${table} is the target of jobs ${jobs} with ${describeWrite(first)}: allowed, but ${consequence}, ` +
        'and the table gets the columns of every one of their reports; give each job its own table unless that is meant',
    );
  }
  for (const [job, j] of Object.entries(cfg.jobs)) {
    const t = qualifiedTarget(j.target.table);
    const existing = t && catalogue?.get(`${t.schema}.${t.table}`);
    if (!existing || !isLoadableRelkind(existing.relkind)) continue;
    for (const c of Object.keys(j.target.columns)) {
      if (existing.columns.includes(c) || closestMatch(c, existing.columns)) continue;
      out.push(
        `${file}: jobs.${job}.target.columns.${c}: the target ${t.schema}.${t.table} has no column ${c} yet: its declared type applies only when the report brings a new column ${c}, ` +
          `and a run whose report has no such column fails; if it is a typo, fix it (the target's columns: ${existing.columns.join(', ') || 'none'})`,
      );
    }
  }
  return out;
}
