/**
 * The login store of a connection for the report client: PostgreSQL (src/history/logins.ts) with the
 * key from REPORT_ETL_SECRET_KEY for a user-dependent service user. Used by runAttempt and by a worker's clients.
 */
import type { Queryable } from '../db.ts';
import { makeConnectionAuthStore } from '../history/logins.ts';
import type { ConnectionAuthStore, ReportConnection } from '../report-api/types.ts';
import { secretKeyFromEnv } from '../secret-box.ts';

/**
 * The ConnectionAuthStore of jobs.yaml connection `name`.
 * @throws ConfigError when the connection is user-dependent and REPORT_ETL_SECRET_KEY is missing or malformed
 */
export function connectionAuthStore(db: Queryable, name: string, connection: ReportConnection): ConnectionAuthStore {
  const auth = connection.auth ?? 'client_credentials';
  const key = auth === 'authorization_code' ? secretKeyFromEnv() : undefined;
  return makeConnectionAuthStore(
    db,
    { connection: name, baseUrl: connection.baseUrl, clientId: connection.clientId },
    auth,
    key,
  );
}
