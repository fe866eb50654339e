/**
 * The alerts a finished run causes, however it was started: `failed` when it failed for good (after its last
 * retry), `login_required` first for LOGIN_REQUIRED (a target that does not list it gets `failed`), `recovered` at
 * the first success after a failure. The failing state lives in etl.job_alerts, so any process sees the recovery.
 */
import type pg from 'pg';
import { coerceError, EtlError } from '../errors.ts';
import { summaryLine } from '../failure-text.ts';
import { readAttemptRequest } from '../history/attempt-request.ts';
import { clearFailing, markFailing } from '../history/job-alerts.ts';
import type { Logger } from '../logger.ts';
import type { AlertEvent } from '../vocabulary.ts';
import type { AlertMessage } from './alert-message.ts';
import type { AlertSender } from './webhook-sender.ts';

/** The error kind of a refused refresh token (docs/report-export-service.md "Refresh" 5). */
export const LOGIN_REQUIRED = 'LOGIN_REQUIRED';

type RunOutcome = { job: string; runKey: string; attemptId: string; trigger?: string | undefined };

/** What a run's outcome is told to. Never throws: an alert problem must not fail a run. */
export interface RunAlerts {
  /** A run succeeded (an attempt committed, or found its rows already loaded). */
  succeeded(o: RunOutcome): Promise<void>;
  /** A run failed for good; `error` is the attempt's typed cause. */
  failed(o: RunOutcome & { error: Error }): Promise<void>;
}

/** Run alerts that do nothing. */
export const noRunAlerts: RunAlerts = { succeeded: async () => undefined, failed: async () => undefined };

/** The run alerts on etl.job_alerts and `sender`; `publicUrl` (the admin server) makes links to a run's page. */
export function makeRunAlerts(
  pool: pg.Pool,
  sender: AlertSender,
  logger: Logger,
  publicUrl: string | undefined = process.env.ADMIN_PUBLIC_URL,
): RunAlerts {
  const base = publicUrl?.replace(/\/+$/, '');
  const send = (
    { job, runKey, attemptId, trigger }: RunOutcome,
    extra: Partial<AlertMessage>,
    events: AlertEvent[],
  ) => {
    const url = base ? `${base}/admin/runs/${encodeURIComponent(job)}/${encodeURIComponent(runKey)}` : undefined;
    sender.send({ job, at: new Date().toISOString(), runKey, attemptId, trigger, ...extra, url }, events);
  };
  const log = logger.child({ component: 'alerts' });
  const warn = (event: string, o: RunOutcome, err: unknown) =>
    log.warn({ job: o.job, err: coerceError(err).message }, `could not work out the ${event} alert`);
  return {
    async succeeded(o) {
      try {
        const was = await clearFailing(pool, o.job);
        if (was) send(o, { failingSince: was.failingSince.toISOString() }, ['recovered']);
      } catch (err) {
        warn('recovered', o, err);
      }
    },
    async failed(o) {
      try {
        await markFailing(pool, o.job, o.attemptId);
        const kind = o.error instanceof EtlError ? o.error.code : (o.error as { code?: unknown }).code;
        const events: AlertEvent[] = kind === LOGIN_REQUIRED ? ['login_required', 'failed'] : ['failed'];
        const text = o.error instanceof EtlError && o.error.serverMessage ? o.error.serverMessage : o.error.message;
        const errorKind = typeof kind === 'string' ? kind : 'INTERNAL';
        const { rows } = await pool.query<{ request: unknown }>(
          'SELECT request FROM etl.attempts WHERE attempt_id = $1',
          [o.attemptId],
        );
        const request = readAttemptRequest(rows[0]?.request);
        send(o, { errorKind, error: summaryLine(text), errorText: text, ...(request ? { request } : {}) }, events);
      } catch (err) {
        warn('failed', o, err);
      }
    },
  };
}
