/**
 * The suite's own database (docs/architecture.md "Tests"): `<name>_test` on the server of the database DATABASE_URL
 * names, which the suite never writes; and a snapshot of a database that shows whether anything wrote to it.
 */
import pg from 'pg';
import { quoteIdent } from '../../src/warehouse/identifiers.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The suite's database (test/support/global-setup.ts), also in every worker's DATABASE_URL. */
    testDatabaseUrl: string;
    /** The database DATABASE_URL names, as it was before the first test file. */
    originalDatabase: { url: string; snapshot: DatabaseSnapshot };
  }
}

/** The database a PostgreSQL URL names: its path, else its user (as libpq defaults), else `postgres`. */
export function databaseName(url: string): string {
  const u = new URL(url);
  return decodeURIComponent(u.pathname.slice(1)) || decodeURIComponent(u.username) || 'postgres';
}

/** `url` with its database replaced by `<name>_test`. */
export function testDatabaseUrl(url: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(`${databaseName(url)}_test`)}`;
  return u.toString();
}

/**
 * Creates the database `testUrl` names unless it exists, connected through `url` (only to read pg_database and send
 * CREATE DATABASE, which writes the server's shared catalog, not that database). Safe when suites race for it.
 * @throws Error saying what to do when the user may not create databases
 */
export async function ensureDatabase(url: string, testUrl: string): Promise<void> {
  const name = databaseName(testUrl);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount) return;
    // 42P04: made meanwhile; 23505: made at the same moment (pg_database's unique index).
    await client.query(`CREATE DATABASE ${quoteIdent(name)}`).catch((err: { code?: string; message: string }) => {
      if (err.code === '42P04' || err.code === '23505') return;
      throw new Error(
        `cannot create the test database ${name} (${err.message}): create it once (createdb ${name}), ` +
          'or let the user of DATABASE_URL create databases',
      );
    });
  } finally {
    await client.end();
  }
}

/** What shows a write to a database: its objects, its etl rows and the rows written into each of its tables. */
export interface DatabaseSnapshot {
  /** `<relkind> <schema>.<name> #<oid>`, `schema <name>`, `function <signature>`: outside the system schemas. */
  objects: string[];
  /** Rows of each etl.* table (the run history). */
  etlRows: Record<string, number>;
  /** n_tup_ins + n_tup_upd + n_tup_del of each table (pg_stat_user_tables). */
  written: Record<string, number>;
}

const USER_SCHEMA = `n.nspname NOT IN ('information_schema') AND n.nspname NOT LIKE 'pg\\_%'`;

/** Reads the snapshot of the database `url` names; reads only. */
export async function snapshotDatabase(url: string): Promise<DatabaseSnapshot> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const objects = await client.query<{ o: string }>(
      `SELECT format('%s %s.%s #%s', c.relkind, n.nspname, c.relname, c.oid) AS o
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE ${USER_SCHEMA}
       UNION ALL SELECT 'schema ' || n.nspname FROM pg_namespace n WHERE ${USER_SCHEMA}
       UNION ALL SELECT 'function ' || p.oid::regprocedure
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE ${USER_SCHEMA}
       ORDER BY 1`,
    );
    const etlRows: Record<string, number> = {};
    const tables = await client.query<{ t: string }>(
      `SELECT c.oid::regclass::text AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'etl' AND c.relkind IN ('r', 'p') ORDER BY 1`,
    );
    for (const { t } of tables.rows)
      etlRows[t] = (await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t}`)).rows[0]!.n;
    const stats = await client.query<{ t: string; n: string }>(
      `SELECT format('%s.%s', schemaname, relname) AS t, n_tup_ins + n_tup_upd + n_tup_del AS n
         FROM pg_stat_user_tables ORDER BY 1`,
    );
    const written = Object.fromEntries(stats.rows.map((r) => [r.t, Number(r.n)]));
    return { objects: objects.rows.map((r) => r.o), etlRows, written };
  } finally {
    await client.end();
  }
}

/** What differs between two snapshots, one line each (`+ r etl.runs #16384`, `etl.runs: 0 → 168 rows`). */
export function snapshotChanges(before: DatabaseSnapshot, after: DatabaseSnapshot): string[] {
  const was = new Set(before.objects);
  const is = new Set(after.objects);
  const changes = [
    ...before.objects.filter((o) => !is.has(o)).map((o) => `- ${o}`),
    ...after.objects.filter((o) => !was.has(o)).map((o) => `+ ${o}`),
  ];
  for (const t of new Set([...Object.keys(before.etlRows), ...Object.keys(after.etlRows)])) {
    const [a, b] = [before.etlRows[t] ?? 0, after.etlRows[t] ?? 0];
    if (a !== b) changes.push(`${t}: ${a} → ${b} rows`);
  }
  for (const [t, n] of Object.entries(after.written)) {
    const more = n - (before.written[t] ?? 0);
    if (more > 0) changes.push(`${t}: ${more} rows written`);
  }
  return changes;
}
