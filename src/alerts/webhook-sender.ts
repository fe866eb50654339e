/**
 * Delivers alerts to the webhook targets of jobs.yaml `alerts:` (issue 12): each target gets the events it lists,
 * in its format, POSTed as JSON. Delivery happens in the background and never blocks or fails a run: a failed POST
 * (network error, 5xx, 408, 429) is tried again with exponential backoff and jitter, up to {@link DELIVERY_ATTEMPTS}
 * times; other answers end it. The webhook URL is a secret (it carries the credential): logs name the target, the
 * event, the job, the HTTP status or the network error code, never the URL.
 */
import { request } from 'undici';
import type { AlertTargetConfig } from '../config/schema.ts';
import type { Logger } from '../logger.ts';
import type { AlertEvent } from '../vocabulary.ts';
import { alertBody, type AlertMessage } from './alert-message.ts';

/** Tries of one delivery (the first and the retries). */
export const DELIVERY_ATTEMPTS = 6;

/** Options of {@link makeAlertSender}. */
export interface AlertSenderOptions {
  /** The targets now in force (jobs.yaml `alerts:`), read at every send so a changed config applies. */
  targets: () => Record<string, AlertTargetConfig>;
  logger: Logger;
  /** First retry delay in ms; doubles each time (default 1 000). */
  backoffMs?: number;
  /** Timeout of one POST in ms (default 10 000). */
  timeoutMs?: number;
}

/** Sends alerts in the background. */
export interface AlertSender {
  /**
   * Queues `m` for every target that lists one of `events` (the first it lists wins, so a target gets one message
   * per occurrence). Returns at once.
   * @param events the event and the more general ones it also counts as, most specific first
   *   (`['login_required', 'failed']`)
   */
  send(m: Omit<AlertMessage, 'event'>, events: readonly AlertEvent[]): void;
  /** Waits until every queued delivery ended, at most `timeoutMs`. @returns whether all ended */
  flush(timeoutMs: number): Promise<boolean>;
  /** Stops retrying (pending retries are dropped after `flush`). */
  close(timeoutMs?: number): Promise<void>;
}

/** An alert sender that sends nothing (tests, commands without alerts). */
export const noAlerts: AlertSender = { send: () => undefined, flush: async () => true, close: async () => undefined };

const RETRY_STATUS = (s: number) => s >= 500 || s === 408 || s === 429;

/** Makes the sender. */
export function makeAlertSender(o: AlertSenderOptions): AlertSender {
  const log = o.logger.child({ component: 'alerts' });
  const backoffMs = o.backoffMs ?? 1_000;
  const timeoutMs = o.timeoutMs ?? 10_000;
  const pending = new Set<Promise<void>>();
  let closed = false;
  const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

  const deliver = async (name: string, target: AlertTargetConfig, m: AlertMessage) => {
    const body = JSON.stringify(alertBody(m, target.format));
    const about = { target: name, event: m.event, job: m.job };
    for (let attempt = 1; attempt <= DELIVERY_ATTEMPTS; attempt++) {
      let retry = true;
      try {
        const res = await request(target.webhook, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': 'report-etl' },
          body,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        });
        await res.body.dump();
        if (res.statusCode >= 200 && res.statusCode < 300) {
          log.info({ ...about, attempt }, 'alert sent');
          return;
        }
        retry = RETRY_STATUS(res.statusCode);
        log.warn({ ...about, attempt, status: res.statusCode }, retry ? 'alert not accepted: trying again' : 'alert refused by the target: not retried');
      } catch (err) {
        // Only the code: an error message may quote the URL.
        const code = (err as { code?: unknown }).code;
        log.warn({ ...about, attempt, err: typeof code === 'string' ? code : 'request failed' }, 'alert could not be sent: trying again');
      }
      if (!retry || closed || attempt === DELIVERY_ATTEMPTS) break;
      await sleep(backoffMs * 2 ** (attempt - 1) * (0.75 + Math.random() * 0.5));
    }
    log.error(about, 'alert not delivered');
  };

  return {
    send(base, events) {
      if (closed) return;
      for (const [name, target] of Object.entries(o.targets())) {
        const event = events.find((e) => target.events.includes(e));
        if (!event) continue;
        const p = deliver(name, target, { ...base, event }).catch(() => undefined);
        pending.add(p);
        void p.finally(() => pending.delete(p));
      }
    },
    async flush(ms) {
      let timer: NodeJS.Timeout | undefined;
      const over = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
      const done = Promise.allSettled([...pending]).then(() => true as const);
      const result = await Promise.race([done, over]);
      clearTimeout(timer);
      return result;
    },
    async close(ms = 10_000) {
      const ok = await this.flush(ms);
      closed = true;
      if (!ok) log.warn({ pending: pending.size }, 'alerts still being delivered at shutdown: dropped');
    },
  };
}
