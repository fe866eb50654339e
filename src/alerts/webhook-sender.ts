/**
 * Alerts to the webhook targets of jobs.yaml `alerts:`: which targets an alert goes to, and one POST of it in the
 * target's format. Retries and durability are the alert queue's (docs/architecture.md "Alerts"). The webhook URL
 * carries the credential: it is never queued and never logged (logs name target, event, job, status or error code).
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
   * Queues `m` in the background for every target that lists one of `events`, most specific first
   * (`['login_required', 'failed']`): the first it lists wins, so a target gets one message per occurrence.
   */
  send(m: Omit<AlertMessage, 'event'>, events: readonly AlertEvent[]): void;
  /** Waits until every alert sent so far was delivered or given up, at most `timeoutMs`. @returns whether all were */
  flush(timeoutMs: number): Promise<boolean>;
  /** Stops sending; alerts not delivered yet stay queued for the next process. */
  close(timeoutMs?: number): Promise<void>;
}

/** An alert sender that sends nothing (tests, commands without alerts). */
export const noAlerts: AlertSender = { send: () => undefined, flush: async () => true, close: async () => undefined };

/** One alert for one target (its jobs.yaml name), with the event that target listens to. */
export type TargetedAlert = { target: string; message: AlertMessage };

/** The targets of `targets` that `m` goes to, each with the first of `events` it lists. */
export function alertsFor(
  targets: Record<string, AlertTargetConfig>,
  m: Omit<AlertMessage, 'event'>,
  events: readonly AlertEvent[],
): TargetedAlert[] {
  return Object.entries(targets).flatMap(([target, t]) => {
    const event = events.find((e) => t.events.includes(e));
    return event ? [{ target, message: { ...m, event } }] : [];
  });
}

const WARNINGS = { retry: 'alert not accepted: trying again', refused: 'alert refused by the target: not retried' };

/**
 * POSTs `m` to `target` once and logs the outcome without the URL. Never throws.
 * @param attempt the 1-based try, for the log
 * @param zone the job's time zone, in which the message's texts print times (alert-message.ts alertBody)
 * @returns `sent` (2xx), `retry` (network error, 5xx, 408, 429) or `refused` (any other status)
 */
export async function deliverAlert(
  name: string,
  target: AlertTargetConfig,
  m: AlertMessage,
  log: Logger,
  attempt = 1,
  timeoutMs = 10_000,
  zone?: string,
): Promise<'sent' | 'retry' | 'refused'> {
  const about = { target: name, event: m.event, job: m.job, attempt };
  try {
    const res = await request(target.webhook, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'report-etl', 'idempotency-key': alertId(m) },
      body: JSON.stringify(alertBody(m, target.format, zone)),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    await res.body.dump();
    const s = res.statusCode;
    const outcome = s >= 200 && s < 300 ? 'sent' : s >= 500 || s === 408 || s === 429 ? 'retry' : 'refused';
    if (outcome === 'sent') log.info(about, 'alert sent');
    else log.warn({ ...about, status: s }, WARNINGS[outcome]);
    return outcome;
  } catch (err) {
    // Only the code: an error message may quote the URL.
    const code = (err as { code?: unknown }).code;
    const why = typeof code === 'string' ? code : 'request failed';
    log.warn({ ...about, err: why }, 'alert could not be sent: trying again');
    return 'retry';
  }
}
