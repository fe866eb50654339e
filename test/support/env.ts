/**
 * Where the integration tests find their real services: DATABASE_URL and REDIS_URL when set,
 * the local servers otherwise (docs/architecture.md "Tests"). Each test file works in its own schema and
 * Redis key prefix, made unique with {@link uniqueName}, so files can run in parallel.
 */
import { randomUUID } from 'node:crypto';

export const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A short unique lower-case name for a schema, queue or key prefix: `<prefix>_<8 hex>`. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 8)}`;
}
