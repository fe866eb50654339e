/**
 * One ReportClient per jobs.yaml connection, reused across runs (its HTTP agent keeps connections alive and its
 * token comes from the Redis-shared cache). A connection whose settings change in jobs.yaml gets a new client;
 * the old one is closed once its in-flight requests are done.
 */
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';
import { makeReportClient } from './report-client.ts';
import type { ConnectionAuthStore, ReportClient, ReportConnection } from './types.ts';

/** A client on loan to one run: give it back with release() when the run is over. */
export interface ClientLease {
  client: ReportClient;
  release(): void;
}

/** The clients of a worker. */
export interface ReportClients {
  /**
   * The client of `name` for these settings, made on first use, on loan until release(). A client whose
   * connection settings changed is closed only when the last run using it gives it back.
   * @throws what makeReportClient throws (discovery)
   */
  acquire(name: string, connection: ReportConnection): Promise<ClientLease>;
  /** Closes every client (after the runs using them are over: call it once the worker stopped). */
  close(): Promise<void>;
}

interface Entry {
  settings: string;
  client: Promise<ReportClient>;
  users: number;
  retired: boolean;
}

/**
 * Makes the per-connection client cache of a worker.
 * @param authStore the login store of a connection (required for auth: authorization_code; records scopes); may
 *   throw ConfigError (e.g. REPORT_ETL_SECRET_KEY missing), which acquire() passes on
 */
export function makeReportClients(
  redis: Redis,
  logger: Logger,
  authStore?: (name: string, connection: ReportConnection) => ConnectionAuthStore,
  /** Prefix of the Redis keys of the shared access tokens: the installation's, `<prefix>:` (default `report-etl:`). */
  keyPrefix?: string,
): ReportClients {
  const clients = new Map<string, Entry>();
  const closing: Promise<unknown>[] = [];
  const closeQuietly = (e: Entry) => closing.push(e.client.then((client) => client.close()).catch(() => undefined));
  return {
    async acquire(name, connection) {
      const settings = JSON.stringify(connection);
      let entry = clients.get(name);
      if (entry && entry.settings !== settings) {
        entry.retired = true;
        if (entry.users === 0) closeQuietly(entry);
        entry = undefined;
      }
      if (!entry) {
        const fresh: Entry = {
          settings,
          // No run's abort signal here: the client is shared, and one run's Ctrl-C must not fail the others'
          // discovery. Its requests are bounded by the connection's timeout.
          client: Promise.resolve().then(() => {
            const store = authStore?.(name, connection);
            return makeReportClient({
              connection,
              connectionName: name,
              redis,
              logger,
              ...(store ? { authStore: store } : {}),
              ...(keyPrefix ? { keyPrefix } : {}),
            });
          }),
          users: 0,
          retired: false,
        };
        clients.set(name, fresh);
        // A failed discovery is not cached: the next run tries again.
        fresh.client.catch(() => {
          if (clients.get(name) === fresh) clients.delete(name);
        });
        entry = fresh;
      }
      const e = entry;
      e.users += 1;
      try {
        const client = await e.client;
        let released = false;
        return {
          client,
          release() {
            if (released) return;
            released = true;
            e.users -= 1;
            if (e.retired && e.users === 0) closeQuietly(e);
          },
        };
      } catch (err) {
        e.users -= 1;
        throw err;
      }
    },
    async close() {
      for (const e of clients.values()) closeQuietly(e);
      clients.clear();
      await Promise.all(closing);
    },
  };
}
