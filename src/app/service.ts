/**
 * The long-running process (`scheduler`, `worker`, `start`): the stores, the watched jobs.yaml and the chosen parts,
 * stopped last-in-first-out (docs/architecture.md "Lifecycle").
 */
import { openStores } from './bootstrap.ts';
import { databasePoolMax, Releasers } from './connections.ts';
import type { Logger } from '../logger.ts';
import { watchLiveConfig } from '../config/live-config.ts';
import { subjectZone } from '../config/job-zone.ts';
import { DEFAULT_QUEUE_PREFIX } from '../queue/names.ts';
import { makeQueue, type RunQueue } from '../queue/queue.ts';
import { makeScheduler, type Scheduler } from '../queue/scheduler.ts';
import { makeRunWorker, type RunWorker, type RunWorkerDeps } from '../queue/worker.ts';
import { makeJanitor } from '../queue/janitor.ts';
import { openAttemptOwner } from '../history/attempt-owner.ts';
import { makeAlertWorker, makeQueuedAlertSender } from '../queue/alert-queue.ts';
import { makeRunAlerts } from '../alerts/run-alerts.ts';
import { makeReportClients } from '../report-api/client-registry.ts';
import { startTracing } from './tracing-sdk.ts';

/** Options of {@link startService}. */
export interface ServiceOptions {
  configPath: string;
  logger: Logger;
  scheduler?: boolean;
  worker?: boolean;
  admin?: boolean;
  /** Admin server port (default 3000) and host (default 127.0.0.1). */
  adminPort?: number;
  adminHost?: string;
  /** BullMQ prefix (default 'report-etl'). */
  prefix?: string;
  workerOptions?: Pick<
    RunWorkerDeps,
    'concurrency' | 'lockDurationMs' | 'stalledIntervalMs' | 'maxStalledCount' | 'overlapRetryMs' | 'overlapLockTtlMs'
  >;
  /** How long running runs may finish on shutdown, in ms (default 60 000). */
  graceMs?: number;
  /** Time between janitor sweeps in ms (default 30 000). */
  janitorIntervalMs?: number;
}

/** A running service. */
export interface Service {
  queue: RunQueue;
  scheduler?: Scheduler;
  worker?: RunWorker;
  /** Admin server URL when started. */
  adminUrl?: string;
  /** Graceful stop (see ServiceOptions.graceMs); a second call waits for the first. */
  stop(): Promise<void>;
  /** Aborts running runs at once (second signal); stop() still finishes the shutdown. */
  abortRuns(): void;
}

/**
 * Starts the chosen parts.
 * @throws ConfigError for an invalid jobs.yaml at start; connection and migration errors (after releasing what was
 *   opened)
 */
export async function startService(o: ServiceOptions): Promise<Service> {
  const releasers = new Releasers();
  const prefix = o.prefix ?? DEFAULT_QUEUE_PREFIX;
  try {
    // Released last, so that the spans of everything that stops before it are exported.
    const tracing = await startTracing(o.logger);
    if (tracing) releasers.add(() => tracing.shutdown());
    const config = await watchLiveConfig(o.configPath, o.logger);
    releasers.add(() => config.close());
    // DATABASE_POOL_MAX for the runs, whatever the concurrency, and one more for the owner session.
    const { pool, redis, releasers: stores } = await openStores(o.logger, { poolMax: databasePoolMax() + 1 });
    releasers.add(() => stores.releaseAll());
    const deps = { pool, redis, logger: o.logger };
    const queue = makeQueue(redis, prefix);
    releasers.add(() => queue.close());
    // Alerts wait in their own queue until a target took them; every long-running process delivers them.
    const zoneOf = (subject: string) => subjectZone(config.current(), subject);
    const alertDeps = { connection: redis, prefix, targets: () => config.current().alerts, logger: o.logger, zoneOf };
    const sender = makeQueuedAlertSender(alertDeps);
    releasers.add(() => sender.close());
    const alertWorker = makeAlertWorker(alertDeps);
    releasers.add(() => alertWorker.close());
    const clients = makeReportClients(redis, o.logger, undefined, `${prefix}:`);
    releasers.add(() => clients.close());
    const invalidJobs = () => config.invalid().filter((e) => e.kind === 'job');
    const janitor = makeJanitor({
      ...deps,
      config: config.current,
      invalidJobs: () => invalidJobs().map((e) => e.name),
      alerts: sender,
      clients,
      prefix,
      intervalMs: o.janitorIntervalMs,
    });
    releasers.add(() => janitor.close());
    let stopped: Promise<void> | undefined;
    const service: Service = {
      queue,
      stop: () => (stopped ??= releasers.releaseAll()),
      abortRuns: () => service.worker?.abortAll('second signal: aborting now'),
    };
    if (o.admin) {
      const { startAdminServer } = await import('../admin/server.ts');
      const admin = await startAdminServer({
        ...deps,
        queue,
        liveConfig: config,
        port: o.adminPort ?? 3000,
        connections: () => config.current().connections,
        ...(o.adminHost ? { host: o.adminHost } : {}),
      });
      releasers.add(() => admin.close());
      service.adminUrl = admin.url;
    }
    if (o.worker) {
      const owner = await openAttemptOwner(pool, o.logger);
      releasers.add(() => owner.close());
      const worker = makeRunWorker({
        ...deps,
        config: config.current,
        prefix,
        owner,
        alerts: makeRunAlerts(pool, sender, o.logger),
        invalidJobs: () => new Map(invalidJobs().map((e) => [e.name, e.problems])),
        ...o.workerOptions,
      });
      releasers.add(() => worker.close(o.graceMs ?? 60_000));
      service.worker = worker;
    }
    if (o.scheduler) {
      const scheduler = makeScheduler({ config, queue, pool, logger: o.logger });
      releasers.add(() => scheduler.close());
      await scheduler.start();
      service.scheduler = scheduler;
    }
    janitor.start();
    return service;
  } catch (err) {
    await releasers.releaseAll().catch(() => undefined);
    throw err;
  }
}
