/**
 * One ReportClient per jobs.yaml connection, reused across runs (its HTTP agent keeps connections alive and its
 * token comes from the Redis-shared cache). A connection whose settings change in jobs.yaml gets a new client;
 * the old one is closed once its in-flight requests are done.
 */
import type { Redis } from 'ioredis';
import type { ConnectionConfig } from '../config/schema.ts';
import type { Logger } from '../logger.ts';
import { makeReportClient, type ReportClient } from '../report-api/index.ts';

/** The clients of a worker. */
export interface ReportClients {
  /** The client of `name` for these settings; made on first use. @throws what makeReportClient throws (discovery) */
  get(name: string, connection: ConnectionConfig): Promise<ReportClient>;
  /** Closes every client. */
  close(): Promise<void>;
}

/** Makes the per-connection client cache of a worker. */
export function makeReportClients(redis: Redis, logger: Logger): ReportClients {
  const clients = new Map<string, { settings: string; client: Promise<ReportClient> }>();
  const retired: Promise<unknown>[] = [];
  const closeQuietly = (c: Promise<ReportClient>) => c.then((client) => client.close()).catch(() => undefined);
  return {
    get(name, connection) {
      const settings = JSON.stringify(connection);
      const known = clients.get(name);
      if (known && known.settings === settings) return known.client;
      if (known) retired.push(closeQuietly(known.client));
      const client = makeReportClient({ connection, connectionName: name, redis, logger });
      clients.set(name, { settings, client });
      // A failed discovery is not cached: the next run tries again.
      client.catch(() => {
        if (clients.get(name)?.client === client) clients.delete(name);
      });
      return client;
    },
    async close() {
      const all = [...clients.values()].map((c) => closeQuietly(c.client));
      clients.clear();
      await Promise.all([...all, ...retired]);
    },
  };
}
