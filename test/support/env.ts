/**
 * Where the integration tests find their real services (docs/architecture.md "Tests"): the suite's own database,
 * which test/support/global-setup.ts made (never the one DATABASE_URL names), and REDIS_URL or the local Redis.
 * Each test file works in its own schema and Redis key prefix, made unique with {@link uniqueName}, so files can run
 * in parallel.
 */
import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';

export const DATABASE_URL = inject('testDatabaseUrl');
if (!DATABASE_URL)
  throw new Error('no test database: run the tests with vitest.config.ts, whose global setup makes it');
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A short unique lower-case name for a schema, queue or key prefix: `<prefix>_<8 hex>`. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 8)}`;
}

/**
 * A Redis key prefix of a test's own inside the suite's (`<REPORT_ETL_QUEUE_PREFIX>-test`, global-setup.ts), whose
 * keys the suite's teardown deletes whether or not the file deletes them: `report-etl-test:adm_1a2b3c4d`.
 */
export function testPrefix(name: string): string {
  return `${process.env.REPORT_ETL_QUEUE_PREFIX || 'report-etl-test'}:${uniqueName(name)}`;
}
