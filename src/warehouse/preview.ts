/**
 * What a load would make of a report's first rows, without loading anything: the target
 * columns with the type each would get and where that type comes from, and the rows as PostgreSQL would store
 * them. Runs inside a transaction the caller rolls back: the rows go into the per-transaction staging table
 * only, so the same COPY path, the same type rules and the same casts as a real load decide what is shown.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import pgCopyStreams from 'pg-copy-streams';
import { holdsSkippedTime, inferColumnType } from './column-types.ts';
import { normaliseColumnNames, quoteIdent } from './identifiers.ts';
import { mapCopyError } from './load-errors.ts';
import { loadPlace } from './load-plan.ts';
import type { RowSource } from './row-source.ts';
import { createStaging, SEQ, STAGING } from './staging.ts';
import { describeTable } from './target-table.ts';
import { checkTargetNames, type TargetNames } from './target-names.ts';
import { checkRangeBounds, type ReplaceRange } from './replace-range.ts';

/** A target column as a load would make it. */
export interface PreviewColumn {
  /** Normalised column name in the target. */
  name: string;
  /** The report's own column name. */
  reportName: string;
  type: string;
  /**
   * fixed: the output type's table shape (lines, documents, one document per page); existing: the target has the
   * column; declared: `target.columns`; inferred: from the values (of these rows only).
   */
  source: 'fixed' | 'existing' | 'declared' | 'inferred';
}

/** A value that does not fit its column's type: a real load of this row would fail. */
export interface PreviewMisfit {
  /** 1-based row of the preview. */
  row: number;
  column: string;
  value: string;
}

/** What {@link previewRows} found. */
export interface PreviewResult {
  columns: PreviewColumn[];
  /**
   * Up to `limit` rows, each value as PostgreSQL would store and print it (null for NULL, the raw text when it does not
   * fit).
   */
  rows: (string | null)[][];
  misfits: PreviewMisfit[];
  /** With a range (replace-range.ts): the shown rows whose range column lies outside it, which a load refuses. */
  outsideRange: PreviewMisfit[];
}

/**
 * Stages the rows of `source` and reads the first `limit` back with the types a load would give them.
 * @param tx a client inside a transaction that the caller rolls back
 * @param o the job's target, merge key and declared types (checked against the report's columns as a load checks
 *   them), and the rows to show
 * @returns undefined for a report with no rows and no header
 * @throws EtlError TARGET_INVALID when a merge key or declared column is not a column of the report (target-names.ts);
 *   what the source throws (fetch, parse), DATABASE errors
 */
export async function previewRows(
  tx: pg.PoolClient,
  o: TargetNames & { limit: number; range?: ReplaceRange | undefined },
  source: RowSource,
): Promise<PreviewResult | undefined> {
  // Every value's kind is recorded, in text format: the preview shows the types a first load would infer.
  const reportColumns = await source.open(() => ({ inspect: true }));
  if (!reportColumns) return undefined;
  const names = normaliseColumnNames(reportColumns);
  const target = await describeTable(tx, o.target);
  // What a load would refuse, the preview refuses alike, before it reads a row.
  checkTargetNames(o, names, target, 'preview');
  await createStaging(
    tx,
    names.map((n) => ({ name: n, type: 'text' })),
  );
  const copy = tx.query(
    pgCopyStreams.from(
      `COPY ${STAGING} (${names.map(quoteIdent).join(', ')}) FROM STDIN WITH (FORMAT ${source.copyFormat})`,
    ),
  );
  try {
    await pipeline(Readable.from(source.rows(), { objectMode: false }), copy);
  } catch (err) {
    throw mapCopyError(
      err,
      loadPlace(STAGING, source, reportColumns, names, () => 'text'),
    );
  }
  const existing = new Map(target?.map((c) => [c.name, c.type]) ?? []);
  const fixed = new Map(source.fixedColumns?.map((c) => [c.name, c.type]) ?? []);
  const kinds = source.kinds();
  const columns = names.map((name, i): PreviewColumn => {
    const [type, from]: [string, PreviewColumn['source']] = fixed.has(name)
      ? [fixed.get(name)!, 'fixed']
      : existing.has(name)
        ? [existing.get(name)!, 'existing']
        : o.declaredTypes.has(name)
          ? [o.declaredTypes.get(name)!, 'declared']
          : [inferColumnType(kinds[i] ?? 0), 'inferred'];
    return { name, reportName: reportColumns[i]!, type, source: from };
  });
  // As a load does (copy-load.ts): a column with a local time the zone skips stays text.
  for (const c of columns)
    if (c.source === 'inferred' && c.type === 'timestamptz' && (await holdsSkippedTime(tx, STAGING, c.name)))
      c.type = 'text';
  // Per column: the value as its type prints it when it fits (etl.fits_type, migrations/0004), else the raw text.
  const exprs = columns.map((c, i) => {
    const col = quoteIdent(c.name);
    // A document's content is shown by its size, not its bytes.
    if (c.type === 'bytea')
      return (
        `CASE WHEN ${col} IS NULL THEN NULL ELSE ((length(${col}) - 2) / 2)::text || ' bytes' END AS v${i}, ` +
        `true AS f${i}, NULL AS r${i}, $${i + 2}::text AS t${i}`
      );
    return (
      `CASE WHEN etl.fits_type(${col}, $${i + 2}) THEN CAST(CAST(${col} AS text) AS ${c.type})::text END AS ` +
      `v${i}, etl.fits_type(${col}, $${i + 2}) AS f${i}, ${col} AS r${i}`
    );
  });
  const { rows } = await tx.query<Record<string, string | boolean | null>>(
    `SELECT ${exprs.join(', ')} FROM ${STAGING} ORDER BY ${SEQ} LIMIT $1`,
    [o.limit, ...columns.map((c) => c.type)],
  );
  const misfits: PreviewMisfit[] = [];
  const values = rows.map((r, row) =>
    columns.map((c, i) => {
      if (r[`f${i}`] === false) {
        misfits.push({ row: row + 1, column: c.name, value: String(r[`r${i}`]) });
        return String(r[`r${i}`]);
      }
      return (r[`v${i}`] as string | null) ?? null;
    }),
  );
  return { columns, rows: values, misfits, outsideRange: await rowsOutside(tx, o, columns) };
}

/** The preview's rows whose range column fits its type but lies outside the range (a load's RANGE_VIOLATION). */
async function rowsOutside(
  tx: pg.PoolClient,
  o: { limit: number; range?: ReplaceRange | undefined },
  columns: readonly PreviewColumn[],
): Promise<PreviewMisfit[]> {
  const c = o.range && columns.find((col) => col.name === o.range!.column);
  if (!o.range || !c) return [];
  await checkRangeBounds(tx, o.range, c.type);
  const col = quoteIdent(c.name);
  const value = `CAST(CAST(${col} AS text) AS ${c.type})`;
  const { rows } = await tx.query<{ row: string; value: string | null }>(
    `SELECT n AS row, r AS value FROM (SELECT row_number() OVER (ORDER BY ${SEQ}) AS n, ${col} AS r,
            CASE WHEN etl.fits_type(${col}, $3) THEN (${value} >= $1 AND ${value} < $2) END AS inside
       FROM ${STAGING} ORDER BY ${SEQ} LIMIT $4) s
      WHERE inside IS NOT TRUE AND (r IS NULL OR etl.fits_type(r, $3))`,
    [o.range.from, o.range.to, c.type, o.limit],
  );
  return rows.map((r) => ({ row: Number(r.row), column: c.name, value: r.value ?? 'NULL' }));
}
