/**
 * The alert queue (docs/architecture.md "Alerts"): alerts wait in BullMQ until their target took them, so that a
 * process that stops loses none. A queued alert holds the target's name, never the webhook URL (a secret), and its
 * id is a hash of target and message, so that the same alert is queued once; delivery is at least once.
 */
import { createHash } from 'node:crypto';
import { Queue, UnrecoverableError, Worker, type ConnectionOptions } from 'bullmq';
import type { AlertMessage } from '../alerts/alert-message.ts';
import {
  alertsFor,
  deliverAlert,
  DELIVERY_ATTEMPTS,
  type AlertSender,
  type TargetedAlert,
} from '../alerts/webhook-sender.ts';
import type { AlertTargetConfig } from '../config/schema.ts';
import { coerceError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { DEFAULT_QUEUE_PREFIX } from './names.ts';

/** The BullMQ queue of alerts. */
export const ALERT_QUEUE_NAME = 'report-etl-alerts';

/** Delivered alerts are kept a day, given-up ones a week: their ids stay taken. */
const KEEP_DELIVERED_S = 86_400;
const KEEP_GIVEN_UP_S = 7 * 86_400;

/** First retry delay of a delivery, in ms (doubling). */
const ALERT_BACKOFF_MS = 1_000;

/** What the alert queue, its sender and its worker share. */
export interface AlertQueueDeps {
  connection: ConnectionOptions;
  prefix?: string | undefined;
  /** The targets in force, read at each send and delivery. */
  targets: () => Record<string, AlertTargetConfig>;
  /** The time zone of a job by name (its schedule's, jobs.yaml now), for the times in the texts; undefined: UTC. */
  zoneOf?: ((job: string) => string | undefined) | undefined;
  logger: Logger;
}

/** The queue job id of one alert for one target. */
function alertQueueJobId(a: TargetedAlert): string {
  return createHash('sha256')
    .update(JSON.stringify([a.target, a.message]))
    .digest('hex')
    .slice(0, 32);
}

/** BullMQ options of the alert queue and its worker. */
function queueOptions(deps: AlertQueueDeps): { connection: ConnectionOptions; prefix: string } {
  return { connection: deps.connection, prefix: deps.prefix ?? DEFAULT_QUEUE_PREFIX };
}

/** What a log line about one alert names. */
function about(a: TargetedAlert): { target: string; event: string; job: string } {
  return { target: a.target, event: a.message.event, job: a.message.job };
}

/** An {@link AlertSender} that queues each alert per target; `flush` waits for those it queued to be done. */
export function makeQueuedAlertSender(deps: AlertQueueDeps): AlertSender {
  const log = deps.logger.child({ component: 'alerts' });
  const queue = new Queue<TargetedAlert>(ALERT_QUEUE_NAME, queueOptions(deps));
  queue.on('error', (err) => log.error({ err: coerceError(err).message }, 'alert queue error'));
  const queued = new Set<Promise<void>>();
  const ids = new Set<string>();
  let closed = false;
  const enqueue = async (a: TargetedAlert): Promise<void> => {
    const jobId = alertQueueJobId(a);
    try {
      await queue.add(a.target, a, {
        jobId,
        attempts: DELIVERY_ATTEMPTS,
        backoff: { type: 'exponential', delay: ALERT_BACKOFF_MS },
        removeOnComplete: { age: KEEP_DELIVERED_S },
        removeOnFail: { age: KEEP_GIVEN_UP_S },
      });
      ids.add(jobId);
    } catch (err) {
      log.error({ ...about(a), err: coerceError(err).message }, 'alert could not be queued');
    }
  };
  return {
    send(m, events) {
      if (closed) return;
      for (const a of alertsFor(deps.targets(), m, events)) {
        const p = enqueue(a);
        queued.add(p);
        void p.finally(() => queued.delete(p));
      }
    },
    async flush(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      await Promise.allSettled([...queued]);
      for (;;) {
        const states = await Promise.all([...ids].map(async (id) => (await queue.getJob(id))?.getState()));
        if (states.every((s) => s === undefined || s === 'completed' || s === 'failed')) return true;
        if (Date.now() >= deadline) return false;
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async close() {
      closed = true;
      await Promise.allSettled([...queued]);
      await queue.close();
    },
  };
}

/** A running alert worker. */
export interface AlertWorker {
  /** Stops taking alerts; one being delivered finishes first. Idempotent. */
  close(): Promise<void>;
}

/**
 * Starts delivering queued alerts to their targets as jobs.yaml names them now: a target gone drops its alerts, a
 * refusal (4xx) gives up at once, other failures are retried.
 */
export function makeAlertWorker(deps: AlertQueueDeps): AlertWorker {
  const log = deps.logger.child({ component: 'alerts' });
  const worker = new Worker<TargetedAlert>(
    ALERT_QUEUE_NAME,
    async (job) => {
      const { target: name, message } = job.data;
      const target = deps.targets()[name];
      if (!target) {
        log.warn(about(job.data), 'alert target no longer in jobs.yaml: alert dropped');
        return 'dropped';
      }
      const zone = deps.zoneOf?.(message.job);
      const outcome = await deliverAlert(
        name,
        target,
        message as AlertMessage,
        log,
        job.attemptsMade + 1,
        10_000,
        zone,
      );
      if (outcome === 'sent') return outcome;
      if (outcome === 'refused') throw new UnrecoverableError('refused by the target');
      if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) log.error(about(job.data), 'alert not delivered');
      throw new Error('not delivered yet');
    },
    { ...queueOptions(deps), concurrency: 4 },
  );
  worker.on('error', (err) => log.error({ err: coerceError(err).message }, 'alert worker error'));
  let closing: Promise<void> | undefined;
  return { close: () => (closing ??= worker.close()) };
}
