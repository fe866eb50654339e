/**
 * What `report-etl validate` reads of PostgreSQL: the relations under the jobs' target names, in a read-only
 * transaction with short timeouts. A PostgreSQL that cannot be read is said, not thrown: the file's own checks do
 * not depend on it.
 */
import type { TargetCatalogue } from '../config/target-checks.ts';
import type { TableName } from '../warehouse/identifiers.ts';

/** Connect and statement timeout, in ms. */
const CATALOGUE_TIMEOUT_MS = 3_000;

/** The catalogue, or why there is none (one line, no password). */
type CatalogueRead = { catalogue: TargetCatalogue } | { unavailable: string };

/** Reads the relations PostgreSQL (DATABASE_URL) holds under `tables` (schema defaulted). */
export async function readTargetCatalogue(
  tables: readonly TableName[],
  timeoutMs = CATALOGUE_TIMEOUT_MS,
): Promise<CatalogueRead> {
  // Loaded on use: `validate --no-database` loads no driver (start-up cost).
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
    const why = `${typeof e.code === 'string' ? `${e.code} ` : ''}${String(e.message ?? err).split('\n', 1)[0]}`;
    return { unavailable: `PostgreSQL at ${where} (DATABASE_URL): ${why}: its catalogue could not be read` };
  } finally {
    await pool.end().catch(() => undefined);
  }
}
