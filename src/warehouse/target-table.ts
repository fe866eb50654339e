/**
 * The target table: reading what exists, creating it, adding new report columns. Existing types are never
 * changed (dashboards and views depend on them); declared types are checked by PostgreSQL itself.
 */
import type pg from 'pg';
import { EtlError } from '../errors.ts';
import { quoteIdent, quoteTable, type TableName } from './identifiers.ts';
import type { Queryable } from '../db.ts';

/** A column of the target: normalised name and PostgreSQL type as `format_type` spells it. */
export interface TargetColumn {
  name: string;
  type: string;
}

/**
 * The target's columns in order, or undefined when the table does not exist.
 * @throws EtlError TARGET_INVALID when the name is taken by a view or other non-table relation
 */
export async function describeTable(db: Queryable, t: TableName): Promise<TargetColumn[] | undefined> {
  const rel = await db.query<{ relkind: string }>(
    `SELECT c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE ` +
      `n.nspname = $1 AND c.relname = $2`,
    [t.schema, t.table],
  );
  const relkind = rel.rows[0]?.relkind;
  if (relkind === undefined) return undefined;
  if (!isLoadableRelkind(relkind))
    throw new EtlError(
      'TARGET_INVALID',
      `target ${t.schema}.${t.table} exists but is not a table (relkind ${relkind})`,
      {
        retryable: false,
        stage: 'load',
      },
    );
  const { rows } = await db.query<TargetColumn>(
    `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type
       FROM pg_attribute a
      WHERE a.attrelid = (quote_ident($1) || '.' || quote_ident($2))::regclass AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum`,
    [t.schema, t.table],
  );
  return rows;
}

/**
 * What PostgreSQL holds under a target's name: the relation's kind (pg_class.relkind) and its column names in order.
 */
export interface ExistingRelation {
  /** `r` a table, `p` a partitioned table (both load); `v` a view, `m` a materialized view, `f` a foreign table, ... */
  relkind: string;
  columns: string[];
  /**
   * The column sets (sorted) of its primary key and unique indexes that a merge's ON CONFLICT can use: valid, not
   * partial, not on expressions, not deferrable.
   */
  uniqueKeys: string[][];
}

/** Whether report-etl loads into a relation of this kind: a table or a partitioned table. */
export function isLoadableRelkind(relkind: string): boolean {
  return relkind === 'r' || relkind === 'p';
}

/**
 * The relations that exist under some target names, read from PostgreSQL's catalogue in one query (it reads
 * pg_class and pg_attribute only, takes no lock on the tables and writes nothing): for `report-etl validate`, which
 * checks the names jobs.yaml gives under target.key and target.columns against existing targets (README "Commands").
 * @param tables target names (schema defaulted)
 * @returns `schema.table` → the relation; a name that is absent does not exist
 */
export async function describeTargets(
  db: Queryable,
  tables: readonly TableName[],
): Promise<Map<string, ExistingRelation>> {
  if (tables.length === 0) return new Map();
  const { rows } = await db.query<{
    schema: string;
    name: string;
    relkind: string;
    columns: string[];
    unique_keys: string[][];
  }>(
    `SELECT n.nspname AS schema, c.relname AS name, c.relkind::text AS relkind,
            coalesce(array_agg(a.attname::text ORDER BY a.attnum) FILTER (WHERE a.attnum > 0 AND NOT a.attisdropped),
              '{}') AS columns,
            (SELECT coalesce(json_agg(u.cols), '[]'::json)
               FROM (SELECT array_agg(ia.attname::text ORDER BY ia.attname) AS cols
                       FROM pg_index i JOIN pg_attribute ia ON ia.attrelid = i.indrelid AND ia.attnum = ANY (i.indkey)
                      WHERE i.indrelid = c.oid AND i.indisunique AND i.indisvalid AND i.indimmediate
                        AND i.indpred IS NULL AND i.indexprs IS NULL
                      GROUP BY i.indexrelid) u) AS unique_keys
       FROM unnest($1::text[], $2::text[]) AS wanted(schema_name, table_name)
       JOIN pg_namespace n ON n.nspname = wanted.schema_name
       JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = wanted.table_name
       LEFT JOIN pg_attribute a ON a.attrelid = c.oid
      GROUP BY n.nspname, c.relname, c.relkind, c.oid`,
    [tables.map((t) => t.schema), tables.map((t) => t.table)],
  );
  return new Map(
    rows.map((r) => [`${r.schema}.${r.name}`, { relkind: r.relkind, columns: r.columns, uniqueKeys: r.unique_keys }]),
  );
}

/**
 * Resolves declared type names with PostgreSQL itself, so a typo fails before any request and modifiers such as
 * `varchar(80)` or `numeric(12,2)` are kept: the type is tried on a throw-away temporary table, rolled back.
 * @param declared normalised column name → type as written in jobs.yaml
 * @returns column → canonical type name as `format_type` spells it (e.g. `character varying(80)`)
 * @throws EtlError CONFIG_INVALID naming the job, column and type
 */
export async function resolveDeclaredTypes(
  pool: pg.Pool,
  job: string,
  declared: Record<string, string>,
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const entries = Object.entries(declared);
  if (entries.length === 0) return out;
  const db = await pool.connect();
  try {
    for (const [column, type] of entries) {
      let canonical: string | undefined;
      await db.query('BEGIN');
      try {
        // The config schema allows only letters, digits, spaces, commas and brackets in a type, and exactly one
        // column must come out, so a declared type cannot smuggle in anything else.
        await db.query(`CREATE TEMP TABLE report_etl_type_probe (x ${type})`);
        const { rows } = await db.query<{ t: string }>(
          `SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute WHERE attrelid = ` +
            `'report_etl_type_probe'::regclass AND attnum > 0`,
        );
        if (rows.length === 1) canonical = rows[0]!.t;
      } catch {
        canonical = undefined;
      } finally {
        await db.query('ROLLBACK');
      }
      if (!canonical)
        throw new EtlError(
          'CONFIG_INVALID',
          `job ${job}: target.columns.${column}: "${type}" is not a PostgreSQL type (try bigint, ` +
            `numeric(12,2), text, timestamptz, date)`,
          { retryable: false, stage: 'config' },
        );
      out.set(column, canonical);
    }
  } finally {
    db.release();
  }
  return out;
}

/**
 * Creates the target's schema when it is missing. Run outside the load transaction (autocommit): two runs
 * creating the same schema at once race inside `CREATE SCHEMA IF NOT EXISTS` (SQLSTATE 23505 / 42P06), and the
 * loser must not have its whole load rolled back for it. An empty schema left by a failed run is harmless.
 */
export async function ensureSchema(db: Queryable, schema: string): Promise<void> {
  const { rowCount } = await db.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
  if (rowCount) return;
  try {
    await db.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== '23505' && code !== '42P06') throw err;
  }
}

/**
 * Creates the table with the given columns (its schema exists, see ensureSchema); merge targets get their key as
 * primary key.
 */
export async function createTable(
  db: Queryable,
  t: TableName,
  columns: readonly TargetColumn[],
  key: readonly string[],
): Promise<void> {
  const defs = columns.map((c) => `${quoteIdent(c.name)} ${c.type}`);
  if (key.length > 0) defs.push(`PRIMARY KEY (${key.map(quoteIdent).join(', ')})`);
  await db.query(`CREATE TABLE ${quoteTable(t)} (${defs.join(', ')})`);
}

/** Adds report columns the target does not have yet (nullable, so existing rows stay valid). */
export async function addColumns(db: Queryable, t: TableName, columns: readonly TargetColumn[]): Promise<void> {
  if (columns.length === 0) return;
  await db.query(
    `ALTER TABLE ${quoteTable(t)} ${columns.map((c) => `ADD COLUMN ${quoteIdent(c.name)} ${c.type}`).join(', ')}`,
  );
}

/** Whether the table `t` exists now. */
export async function targetExists(db: Queryable, t: TableName): Promise<boolean> {
  const { rows } = await db.query<{ exists: boolean }>('SELECT to_regclass($1) IS NOT NULL AS exists', [quoteTable(t)]);
  return rows[0]?.exists === true;
}

/** The type of column `column` of `t` (as format_type spells it), or undefined when the table or column is absent. */
export async function columnTypeOf(db: Queryable, t: TableName, column: string): Promise<string | undefined> {
  const { rows } = await db.query<{ type: string }>(
    `SELECT format_type(a.atttypid, a.atttypmod) AS type FROM pg_attribute a
      WHERE a.attrelid = to_regclass($1) AND a.attname = $2 AND a.attnum > 0 AND NOT a.attisdropped`,
    [quoteTable(t), column],
  );
  return rows[0]?.type;
}

/** A column report-etl keeps in a target beside the report's, filled by its DEFAULT (lineage.ts, mandant-column.ts). */
export interface DefaultedColumn {
  name: string;
  /** As format_type spells it. */
  type: string;
  /** The DEFAULT expression to set. */
  default: string;
  /** Whether the column's DEFAULT as pg_get_expr gives it back (null: none) is this one. */
  hasDefault(found: string | null): boolean;
}

/**
 * Gives the target the columns and DEFAULTs it lacks: one catalog query, and an ALTER TABLE only when something is
 * missing. A column is added without a default and gets it in the same statement, so that rows already there stay
 * NULL rather than taking the default's value.
 * @param wrongType the error for a column of that name with another type
 * @throws that error
 */
export async function addDefaultedColumns(
  db: Queryable,
  target: TableName,
  columns: readonly DefaultedColumn[],
  wrongType: (column: DefaultedColumn, type: string) => Error,
): Promise<void> {
  const { rows } = await db.query<{ name: string; type: string; default: string | null }>(
    `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, pg_get_expr(d.adbin, d.adrelid) AS default
       FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE a.attrelid = to_regclass($1) AND a.attname = ANY($2::text[]) AND NOT a.attisdropped`,
    [quoteTable(target), columns.map((c) => c.name)],
  );
  const have = new Map(rows.map((r) => [r.name, r]));
  const changes: string[] = [];
  for (const c of columns) {
    const found = have.get(c.name);
    if (found && found.type !== c.type) throw wrongType(c, found.type);
    if (!found) changes.push(`ADD COLUMN ${quoteIdent(c.name)} ${c.type}`);
    if (!c.hasDefault(found?.default ?? null))
      changes.push(`ALTER COLUMN ${quoteIdent(c.name)} SET DEFAULT ${c.default}`);
  }
  if (changes.length > 0) await db.query(`ALTER TABLE ${quoteTable(target)} ${changes.join(', ')}`);
}

/** Serialises loads into one target across processes until the transaction ends. */
export async function lockTarget(db: Queryable, t: TableName): Promise<void> {
  await db.query(`SELECT pg_advisory_xact_lock(hashtext('report-etl:target:' || $1))`, [`${t.schema}.${t.table}`]);
}
