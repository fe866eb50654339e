/**
 * One alert and its bodies: generic JSON, a Slack incoming-webhook message, or a Teams message with an Adaptive Card.
 * They name job, event, error kind and the error's first line, and for a failure what was sent (its interval and
 * report request); never a credential or the webhook URL
 * (docs/architecture.md "Alerts", "Errors").
 */
import { createHash } from 'node:crypto';
import { requestLines, type AttemptRequest } from '../history/attempt-request.ts';
import { formatTime } from '../time-text.ts';
import type { AlertEvent, AlertFormat } from '../vocabulary.ts';

/** What happened, as every format carries it; times are ISO 8601. */
export interface AlertMessage {
  event: AlertEvent;
  job: string; // jobs.yaml job name
  at: string;
  runKey?: string | undefined; // etl.runs.run_key of the run that failed or recovered
  attemptId?: string | undefined; // etl.attempts.attempt_id of its attempt
  trigger?: string | undefined; // how the run was started (schedule, manual …)
  errorKind?: string | undefined; // etl.run_errors.error_kind of a failure
  /** The error's first meaningful line (failure-text.ts): the server's words when it sent some, else ours. */
  error?: string | undefined;
  errorText?: string | undefined; // the whole error text
  url?: string | undefined; // the run's page on the admin server (ADMIN_PUBLIC_URL)
  lastSuccessAt?: string | undefined; // for `stale` and `recovered`
  freshness?: string | undefined; // the job's freshness (`26h`), for `stale`
  failingSince?: string | undefined; // for `recovered`
  /** What the failed attempt asked the server for: its interval and report request (history/attempt-request.ts). */
  request?: AttemptRequest | undefined;
}

/**
 * The request of a failed attempt as lines (`interval: …`, `report: …`, `parameters: …`), none without one; times as
 * docs/operations.md "Times" prints them, in `zone` (the job's) with its offset, else UTC marked `Z`.
 */
export function requestText(m: AlertMessage, zone?: string): string[] {
  return m.request ? requestLines(m.request, (t) => formatTime(t, zone)) : [];
}

/** An ISO 8601 time of a message as the texts print it (docs/operations.md "Times"); `?` for none. */
function shownTime(iso: string | undefined, zone: string | undefined): string {
  if (!iso) return '?';
  const t = new Date(iso);
  return Number.isNaN(t.getTime()) ? iso : formatTime(t, zone);
}

const TITLES: Record<AlertEvent, string> = {
  failed: 'failed',
  recovered: 'recovered',
  stale: 'is stale',
  login_required: 'needs a login',
};

/**
 * One line for humans: `report-etl: job sales_orders failed (REPORT_FAILED): Report …`; times in `zone` (the job's),
 * as docs/operations.md "Times" prints them.
 */
export function summary(m: AlertMessage, zone?: string): string {
  const parts = [`report-etl: job ${m.job} ${TITLES[m.event]}`];
  if (m.event === 'failed' || m.event === 'login_required') {
    parts.push(`${m.errorKind ? ` (${m.errorKind})` : ''}${m.error ? `: ${m.error}` : ''}`);
    if (m.event === 'login_required') parts.push(': run `report-etl login <connection>` as the product user');
  }
  if (m.event === 'stale')
    parts.push(
      `: no successful run for more than ${m.freshness ?? '?'} ` +
        `(last success ${m.lastSuccessAt ? shownTime(m.lastSuccessAt, zone) : 'never'})`,
    );
  if (m.event === 'recovered') parts.push(`: a run succeeded after failures since ${shownTime(m.failingSince, zone)}`);
  if (m.runKey)
    parts.push(` (run ${m.runKey}${m.attemptId && m.attemptId !== m.runKey ? `, attempt ${m.attemptId}` : ''})`);
  else if (m.attemptId) parts.push(` (attempt ${m.attemptId})`);
  return parts.join('');
}

// RichTextBlock, not TextBlock: it renders no Markdown, so the server's words cannot make a link or emphasis.
const rich = (...inlines: object[]) => ({ type: 'RichTextBlock', inlines });
const run = (text: string, style: object = {}) => ({ type: 'TextRun', text, ...style });

/**
 * A receiver's key to drop an alert it got twice (one in flight is sent again after a kill -9): 32 hex digits of
 * the event, job, run key and attempt, and for `stale` the last success; never of the time or the texts.
 */
export function alertId(m: AlertMessage): string {
  const key = [m.event, m.job, m.runKey ?? '', m.attemptId ?? '', m.event === 'stale' ? (m.lastSuccessAt ?? '') : ''];
  return createHash('sha256').update(JSON.stringify(key)).digest('hex').slice(0, 32);
}

/**
 * The JSON body of `m` in `format`, each with `id` ({@link alertId}). Its texts (summary, Slack's text, the Teams
 * card) print times in `zone`, the job's (its schedule's), with its offset, or UTC marked `Z` without one or with
 * `REPORT_ETL_TIME_ZONE=UTC` (docs/operations.md "Times"); the fields `at`, `lastSuccessAt` and `failingSince` stay
 * ISO 8601 UTC for machines.
 * - `generic`: `{ source: "report-etl", id, event, job, at, summary, runKey?, attemptId?, trigger?, errorKind?,
 *   error?, errorText? (the whole text), url? (the run's page), request? (of a failure: logicalStart, logicalEnd,
 *   tick, report: { mandant, name, outputType, paging, parameters }, replaceRange?: { column, from, to }), … }`
 * - `slack`: `{ text, id }` (Slack incoming webhooks, also Mattermost and Rocket.Chat)
 * - `teams`: `{ type: "message", id, attachments: [{ contentType: "application/vnd.microsoft.card.adaptive",
 *   content }] }`
 */
export function alertBody(m: AlertMessage, format: AlertFormat, zone?: string): unknown {
  const text = summary(m, zone);
  const id = alertId(m);
  if (format === 'slack') {
    const whole =
      m.errorText && m.errorText.trim() !== (m.error ?? '')
        ? `\n\`\`\`${escapeSlack(m.errorText.replaceAll('```', "'''"))}\`\`\``
        : '';
    const link = m.url ? `\n<${m.url}|Open the run>` : '';
    const sent = requestText(m, zone)
      .map((l) => `\n${escapeSlack(l)}`)
      .join('');
    return {
      text:
        `${m.event === 'recovered' ? ':large_green_circle:' : ':red_circle:'} ${escapeSlack(text)}${sent}${whole}` +
        link,
      id,
    };
  }
  if (format === 'teams') {
    const facts = Object.entries({
      job: m.job,
      event: m.event,
      run: m.runKey,
      attempt: m.attemptId,
      'error kind': m.errorKind,
      'last success': m.lastSuccessAt ? shownTime(m.lastSuccessAt, zone) : undefined,
    }).filter(([, v]) => v !== undefined);
    const body = [
      rich(run(text, { weight: 'Bolder', color: m.event === 'recovered' ? 'Good' : 'Attention' })),
      ...facts.map(([title, value]) => rich(run(`${title}: `, { weight: 'Bolder' }), run(String(value)))),
      ...requestText(m, zone).map((l) => {
        const colon = l.indexOf(': ');
        return rich(run(l.slice(0, colon + 2), { weight: 'Bolder' }), run(l.slice(colon + 2)));
      }),
      ...(m.errorText ? [rich(run(m.errorText, { fontType: 'Monospace' }))] : []),
    ];
    const content = {
      $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
      type: 'AdaptiveCard',
      version: '1.4',
      body,
      ...(m.url ? { actions: [{ type: 'Action.OpenUrl', title: 'Open the run', url: m.url }] } : {}),
    };
    return { type: 'message', id, attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', content }] };
  }
  return { source: 'report-etl', id, ...m, summary: text };
}

/** `&`, `<` and `>` escaped, so the server's words cannot ping a channel, mention someone or disguise a link. */
export function escapeSlack(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}
