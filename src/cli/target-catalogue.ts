/**
 * What `report-etl validate` reads of PostgreSQL (README "Commands"): the relations under the jobs' target names
 * and their columns, from the catalogue, in a read-only transaction on DATABASE_URL with a short connect and statement
 * timeout. It never migrates and never writes; a PostgreSQL that cannot be reached or read is said, not thrown: the
 * file's own checks do not depend on it.
 */
import type { TargetCatalogue } from '../config/target-checks.ts';
import type { TableName } from '../warehouse/identifiers.ts';

/** How long validate waits for PostgreSQL to accept the connection, and for the catalogue query, in ms. */
export const CATALOGUE_TIMEOUT_MS = 3_000;

/** What {@link readTargetCatalogue} got: the catalogue, or why there is none (one line, no password). */
export type CatalogueRead = { catalogue: TargetCatalogue } | { unavailable: string };

/**
 * Reads the relations PostgreSQL (DATABASE_URL) holds under `tables`.
 * @param tables the target tables of a jobs.yaml, schema defaulted
 * @param timeoutMs connect and statement timeout, in ms (default {@link CATALOGUE_TIMEOUT_MS})
 * @returns the catalogue; or `unavailable` saying where PostgreSQL is and why it could not be read (not reachable,
 *   refused, no such database, a query error)
 */
export async function readTargetCatalogue(
  tables: readonly TableName[],
  timeoutMs = CATALOGUE_TIMEOUT_MS,
): Promise<CatalogueRead> {
  // Loaded on use: validate without a database (--no-database) loads no driver (start-up cost).
  const [
    { describeDatabaseUrl, openHistoryPool, StoreUnavailableError },
    { DEFAULT_DATABASE_URL },
    { describeTargets },
    { silentLogger },
  ] = await Promise.all([
    import('../app/bootstrap.ts'),
    import('../app/connections.ts'),
    import('../warehouse/target-table.ts'),
    import('../logger.ts'),
  ]);
  let pool;
  try {
    pool = await openHistoryPool(silentLogger, { poolMax: 1, connectTimeoutMs: timeoutMs });
  } catch (err) {
    if (err instanceof StoreUnavailableError) return { unavailable: err.message };
    throw err;
  }
  try {
    const client = await pool.connect();
    try {
      await client.query('BEGIN READ ONLY');
      await client.query(`SELECT set_config('statement_timeout', $1, true)`, [String(timeoutMs)]);
      return { catalogue: await describeTargets(client, tables) };
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
    }
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown };
    const where = describeDatabaseUrl(process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL);
    return {
      unavailable: `PostgreSQL at ${where} (DATABASE_URL): ${typeof e.code === 'string' ? `${e.code} ` : ''}${String(e.message ?? err).split('\n', 1)[0]}: its catalogue could not be read`,
    };
  } finally {
    await pool.end().catch(() => undefined);
  }
}
