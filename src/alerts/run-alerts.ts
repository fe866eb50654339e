/**
 * The alerts a finished run causes, for every run however it was started (a worker, or
 * `report-etl run` from the user's own cron): `failed` when a run failed for good (after its last retry),
 * `login_required` instead when it failed with LOGIN_REQUIRED (a target that does not list it gets `failed`), and
 * `recovered` at the first success after such a failure. The failing state lives in etl.job_alerts, so a
 * recovery is seen whichever process runs the next success. Never throws: an alert problem must not fail a run.
 */
import type pg from 'pg';
import { coerceError, EtlError } from '../errors.ts';
import { summaryLine } from '../failure-text.ts';
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
  failed(o: {
    job: string;
    runKey: string;
    attemptId: string;
    trigger?: string | undefined;
    error: Error;
  }): Promise<void>;
}

/** Run alerts that do nothing. */
export const noRunAlerts: RunAlerts = { succeeded: async () => undefined, failed: async () => undefined };

/** What on-call staff should read: the server's own words when it sent some, else ours; whole. */
export function errorText(err: Error): string {
  return err instanceof EtlError && err.serverMessage ? err.serverMessage : err.message;
}

/** The first meaningful line of {@link errorText} (failure-text.ts). */
export function firstErrorLine(err: Error): string {
  return summaryLine(errorText(err));
}

/** Makes the run alerts on the run history's alert state and a sender. */
export function makeRunAlerts(
  pool: pg.Pool,
  sender: AlertSender,
  logger: Logger,
  publicUrl: string | undefined = process.env.ADMIN_PUBLIC_URL,
): RunAlerts {
  // The run's page on the admin server, as on-call staff reach it (ADMIN_PUBLIC_URL, e.g. https://etl.example.com).
  const base = publicUrl?.replace(/\/+$/, '');
  const urlOf = (job: string, runKey: string | undefined) =>
    base && runKey ? `${base}/admin/runs/${encodeURIComponent(job)}/${encodeURIComponent(runKey)}` : undefined;
  const log = logger.child({ component: 'alerts' });
  return {
    async succeeded(o) {
      try {
        const was = await clearFailing(pool, o.job);
        if (!was) return;
        sender.send(
          {
            job: o.job,
            at: new Date().toISOString(),
            runKey: o.runKey,
            attemptId: o.attemptId,
            trigger: o.trigger,
            failingSince: was.failingSince.toISOString(),
            url: urlOf(o.job, o.runKey),
          },
          ['recovered'],
        );
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
          {
            job: o.job,
            at: new Date().toISOString(),
            runKey: o.runKey,
            attemptId: o.attemptId,
            trigger: o.trigger,
            errorKind: typeof kind === 'string' ? kind : 'INTERNAL',
            error: firstErrorLine(o.error),
            errorText: errorText(o.error),
            url: urlOf(o.job, o.runKey),
          },
          events,
        );
      } catch (err) {
        log.warn({ job: o.job, err: coerceError(err).message }, 'could not work out the failed alert');
      }
    },
  };
}
