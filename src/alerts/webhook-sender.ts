/**
 * Alerts to the webhook targets of jobs.yaml `alerts:`: which targets an alert goes to, and one delivery of it — a
 * POST of its body in the target's format. Retries and durability are the alert queue's (queue/alert-queue.ts): an
 * alert waits in Redis until a target took it, so a restart loses none (docs/architecture.md "Alerts"). The webhook
 * URL is a secret (it carries the credential): it is never queued (the queue holds the target's name and the message;
 * the URL is read from jobs.yaml when the alert goes out) and never logged (logs name the target, the event, the job,
 * the HTTP status or the network error code).
 */
import { request } from 'undici';
import type { AlertTargetConfig } from '../config/schema.ts';
import type { Logger } from '../logger.ts';
import type { AlertEvent } from '../vocabulary.ts';
import { alertBody, alertId, type AlertMessage } from './alert-message.ts';

/** Tries of one delivery to one target (the first and the retries). */
export const DELIVERY_ATTEMPTS = 6;

/** Sends alerts; where they go and how they are retried is the implementation's (the alert queue). */
export interface AlertSender {
  /**
   * Queues `m` for every target that lists one of `events` (the first it lists wins, so a target gets one message
   * per occurrence). Returns at once; the queueing itself goes on in the background.
   * @param events the event and the more general ones it also counts as, most specific first
   *   (`['login_required', 'failed']`)
   */
  send(m: Omit<AlertMessage, 'event'>, events: readonly AlertEvent[]): void;
  /** Waits until every alert sent so far was delivered or given up, at most `timeoutMs`. @returns whether all were */
  flush(timeoutMs: number): Promise<boolean>;
  /** Stops sending; alerts not delivered yet stay queued for the next process. */
  close(timeoutMs?: number): Promise<void>;
}

/** An alert sender that sends nothing (tests, commands without alerts). */
export const noAlerts: AlertSender = { send: () => undefined, flush: async () => true, close: async () => undefined };

/** One alert for one target: the target's name in jobs.yaml and the message with the event that target listens to. */
export interface TargetedAlert {
  target: string;
  message: AlertMessage;
}

/** The targets of `targets` that `m` goes to, each with the first of `events` it lists. */
export function alertsFor(
  targets: Record<string, AlertTargetConfig>,
  m: Omit<AlertMessage, 'event'>,
  events: readonly AlertEvent[],
): TargetedAlert[] {
  const out: TargetedAlert[] = [];
  for (const [name, target] of Object.entries(targets)) {
    const event = events.find((e) => target.events.includes(e));
    if (event) out.push({ target: name, message: { ...m, event } });
  }
  return out;
}

/** How one delivery ended: taken (2xx), worth another try (network error, 5xx, 408, 429), or refused for good. */
export type DeliveryOutcome = 'sent' | 'retry' | 'refused';

const RETRY_STATUS = (s: number) => s >= 500 || s === 408 || s === 429;

/**
 * POSTs `m` to `target` once, in its format, and logs the outcome without the URL.
 * @param attempt the 1-based try, for the log
 * @param timeoutMs of the POST (default 10 000)
 * @returns the outcome; never throws
 */
export async function deliverAlert(
  name: string,
  target: AlertTargetConfig,
  m: AlertMessage,
  log: Logger,
  attempt = 1,
  timeoutMs = 10_000,
): Promise<DeliveryOutcome> {
  const about = { target: name, event: m.event, job: m.job, attempt };
  try {
    const res = await request(target.webhook, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'report-etl', 'idempotency-key': alertId(m) },
      body: JSON.stringify(alertBody(m, target.format)),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    await res.body.dump();
    if (res.statusCode >= 200 && res.statusCode < 300) {
      log.info(about, 'alert sent');
      return 'sent';
    }
    const retry = RETRY_STATUS(res.statusCode);
    log.warn(
      { ...about, status: res.statusCode },
      retry ? 'alert not accepted: trying again' : 'alert refused by the target: not retried',
    );
    return retry ? 'retry' : 'refused';
  } catch (err) {
    // Only the code: an error message may quote the URL.
    const code = (err as { code?: unknown }).code;
    log.warn(
      { ...about, err: typeof code === 'string' ? code : 'request failed' },
      'alert could not be sent: trying again',
    );
    return 'retry';
  }
}
