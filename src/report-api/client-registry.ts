/**
 * One ReportClient per jobs.yaml connection, reused across runs (keep-alive agent, shared token). A connection whose
 * settings change gets a new client; the old one is closed when the last run using it gives it back.
 */
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';
import { makeReportClient } from './report-client.ts';
import type { ConnectionAuthStore, ReportClient, ReportConnection } from './types.ts';

/** The clients of a worker. */
export interface ReportClients {
  /**
   * The client of `name` for these settings, made on first use, on loan to one run until release().
   * @throws what makeReportClient or `authStore` throws
   */
  acquire(name: string, connection: ReportConnection): Promise<{ client: ReportClient; release(): void }>;
  /** Closes every client; call it once the worker stopped. */
  close(): Promise<void>;
}

type Entry = { settings: string; client: Promise<ReportClient>; users: number; retired: boolean };

/**
 * Makes the per-connection client cache of a worker.
 * @param authStore a connection's login store (required for authorization_code; records scopes)
 * @param keyPrefix of the shared access tokens' Redis keys, `<prefix>:` (default `report-etl:`)
 */
export function makeReportClients(
  redis: Redis,
  logger: Logger,
  authStore?: (name: string, connection: ReportConnection) => ConnectionAuthStore,
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
          // No run's abort signal: one run's Ctrl-C must not fail the others' discovery (the timeout bounds it).
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
