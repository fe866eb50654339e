/**
 * The alerts a finished run causes, for every run however it was started (a worker, or
 * `report-etl run` from the user's own cron): `failed` when a run failed for good (after its last retry),
 * `login_required` instead when it failed with LOGIN_REQUIRED (a target that does not list it gets `failed`), and
 * `recovered` at the first success after such a failure. The failing state lives in etl.job_alerts, so a
 * recovery is seen whichever process runs the next success. Never throws: an alert problem must not fail a run.
 */
import type pg from 'pg';
import { coerceError, EtlError } from '../errors.ts';
import { clearFailing, markFailing } from '../history/job-alerts.ts';
import type { Logger } from '../logger.ts';
import type { AlertEvent } from '../vocabulary.ts';
import type { AlertSender } from './webhook-sender.ts';

/** The error kind of a refused refresh token: the product user must log in again (docs/report-export-service.md "Refresh" 5). */
export const LOGIN_REQUIRED = 'LOGIN_REQUIRED';

/** What a run's outcome is told to. */
export interface RunAlerts {
  /** A run succeeded (an attempt committed, or found its rows already loaded). */
  succeeded(o: { job: string; runKey: string; attemptId: string; trigger?: string | undefined }): Promise<void>;
  /** A run failed for good: no further attempt will be made. `error` is the attempt's typed cause. */
  failed(o: { job: string; runKey: string; attemptId: string; trigger?: string | undefined; error: Error }): Promise<void>;
}

/** Run alerts that do nothing. */
export const noRunAlerts: RunAlerts = { succeeded: async () => undefined, failed: async () => undefined };

/** The first line of what on-call staff should read first: the server's own words when it sent some, else ours. */
export function firstErrorLine(err: Error): string {
  const text = err instanceof EtlError && err.serverMessage ? err.serverMessage : err.message;
  return text.split('\n').find((l) => l.trim() !== '')?.trim() ?? '';
}

/** Makes the run alerts on the run history's alert state and a sender. */
export function makeRunAlerts(pool: pg.Pool, sender: AlertSender, logger: Logger): RunAlerts {
  const log = logger.child({ component: 'alerts' });
  return {
    async succeeded(o) {
      try {
        const was = await clearFailing(pool, o.job);
        if (!was) return;
        sender.send({ job: o.job, at: new Date().toISOString(), runKey: o.runKey, attemptId: o.attemptId, trigger: o.trigger, failingSince: was.failingSince.toISOString() }, ['recovered']);
      } catch (err) {
        log.warn({ job: o.job, err: coerceError(err).message }, 'could not work out the recovered alert');
      }
    },
    async failed(o) {
      try {
        await markFailing(pool, o.job, o.attemptId);
        const kind = o.error instanceof EtlError ? o.error.code : (o.error as { code?: unknown }).code;
        const events: AlertEvent[] = kind === LOGIN_REQUIRED ? ['login_required', 'failed'] : ['failed'];
        sender.send(
          { job: o.job, at: new Date().toISOString(), runKey: o.runKey, attemptId: o.attemptId, trigger: o.trigger, errorKind: typeof kind === 'string' ? kind : 'INTERNAL', error: firstErrorLine(o.error) },
          events,
        );
      } catch (err) {
        log.warn({ job: o.job, err: coerceError(err).message }, 'could not work out the failed alert');
      }
    },
  };
}
