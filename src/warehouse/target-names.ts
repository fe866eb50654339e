/**
 * The column names jobs.yaml gives for a target (`target.key`, the names under `target.columns`), checked against
 * the report's columns once they are known and before anything is loaded (docs/loaded-tables.md "Target names").
 * `report-etl validate` checks them against a target that exists already; a target that does not exist yet is checked
 * here, at its first run, and by `report-etl preview`. A name that matches nothing would otherwise be ignored without a
 * word (a declared type of `bestnd` never reaches the column `bestand`) or fail the load later with a database error.
 */
import { closestMatch } from '../closest-match.ts';
import { EtlError } from '../errors.ts';
import { normaliseColumnName, type TableName } from './identifiers.ts';

/** What the check needs of a load: whose it is, where it goes, its merge key and its declared types. */
export interface TargetNames {
  /** The jobs.yaml job, named in the error (absent: the error names none). */
  job?: string | undefined;
  target: TableName;
  /** Merge key columns (normalised names); empty for replace and append. */
  key: readonly string[];
  /** Declared types by normalised column name (`target.columns`). */
  declaredTypes: ReadonlyMap<string, string>;
  /** The range a replace of one period replaces (`target.replaceRange`): its column must be the report's. */
  range?: { column: string } | undefined;
}

/** Most column names an error lists; the rest are counted. */
const MAX_LISTED = 40;

function listed(names: readonly string[]): string {
  if (names.length === 0) return 'none';
  const shown = names.slice(0, MAX_LISTED).join(', ');
  return names.length > MAX_LISTED ? `${shown}, … (${names.length - MAX_LISTED} more)` : shown;
}

/** ` (did you mean "x"?)` for `name` among `candidates`: its normalised form when that is one, else the closest. */
function didYouMean(name: string, candidates: readonly string[]): string {
  const normalised = normaliseColumnName(name);
  const near = candidates.includes(normalised) ? normalised : closestMatch(name, candidates);
  return near ? ` (did you mean "${near}"?)` : '';
}

/**
 * Checks that every merge key column and the replaceRange column are columns of the report, and that every column
 * with a declared type is a column of the report or of the existing target (a declared type applies to the columns a
 * load creates).
 * @param reportColumns the report's column names, normalised (the target's names), in COPY order
 * @param existing the target's columns, or undefined when it does not exist yet
 * @param where who asks: a `preview` is not told to run a preview to learn the names, it lists them already
 * @throws EtlError TARGET_INVALID (stage load, not retryable) naming the job, each option path and unknown name with
 *   a did-you-mean, and the report's columns; nothing has been loaded
 */
export function checkTargetNames(
  o: TargetNames,
  reportColumns: readonly string[],
  existing: readonly { name: string }[] | undefined,
  where: 'load' | 'preview' = 'load',
): void {
  const report = new Set(reportColumns);
  const targetColumns = (existing ?? []).map((c) => c.name);
  const inTarget = new Set(targetColumns);
  const table = `${o.target.schema}.${o.target.table}`;
  const problems: string[] = [];
  const unknown: { option: string; name: string }[] = [];
  for (const k of o.key) {
    if (report.has(k)) continue;
    unknown.push({ option: 'target.key', name: k });
    problems.push(`target.key: merge key column ${k} is not a column of the report${didYouMean(k, reportColumns)}`);
  }
  if (o.range && !report.has(o.range.column)) {
    const c = o.range.column;
    unknown.push({ option: 'target.replaceRange.column', name: c });
    problems.push(
      `target.replaceRange.column: range column ${c} is not a column of the report${didYouMean(c, reportColumns)}, ` +
        'so no row could be placed in the period',
    );
  }
  for (const c of o.declaredTypes.keys()) {
    if (report.has(c) || inTarget.has(c)) continue;
    const option = `target.columns.${c}`;
    unknown.push({ option, name: c });
    problems.push(
      existing
        ? `${option}: neither the report nor the target ${table} has a column ` +
            `${c}${didYouMean(c, [...reportColumns, ...targetColumns.filter((n) => !report.has(n))])}, ` +
            `so its declared type applies to nothing`
        : `${option}: the report has no column ${c}${didYouMean(c, reportColumns)}, ` +
            `so its declared type applies to nothing`,
    );
  }
  if (problems.length === 0) return;
  const others = targetColumns.filter((n) => !report.has(n));
  const job = o.job === undefined ? '' : `job ${o.job}: `;
  throw new EtlError(
    'TARGET_INVALID',
    `${job}${problems.join('; ')}. The report's columns: ` +
      listed(reportColumns) +
      (existing && others.length > 0 ? `; the target's other columns: ${listed(others)}` : '') +
      '. ' +
      (where === 'preview'
        ? 'Write one of these normalised column names in jobs.yaml (docs/loaded-tables.md "Target names") or remove ' +
          'the entry, then preview again; nothing was read beyond the first page'
        : 'Write normalised column names in jobs.yaml (docs/loaded-tables.md "Target names"; `report-etl preview` ' +
          'shows them) or remove the entry; nothing was loaded'),
    { stage: 'load', retryable: false, details: { job: o.job, table, unknown, reportColumns: [...reportColumns] } },
  );
}
