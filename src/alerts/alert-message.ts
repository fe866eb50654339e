/**
 * One alert and the bodies it is sent as: a generic JSON document, a Slack incoming-webhook
 * message, or a Microsoft Teams message with an Adaptive Card (what Teams workflows' "post to a channel when a
 * webhook request is received" accepts). The texts name job, event, error kind and the first line of the error;
 * they never hold a credential (errors never do, docs/architecture.md "Errors"), and the webhook URL is not part of them.
 */
import { createHash } from 'node:crypto';
import type { AlertEvent, AlertFormat } from '../vocabulary.ts';

/** What happened, as every format carries it. */
export interface AlertMessage {
  event: AlertEvent;
  /** jobs.yaml job name. */
  job: string;
  /** When it happened (ISO 8601). */
  at: string;
  /** The logical run (`etl.runs.run_key`) that failed or recovered. */
  runKey?: string | undefined;
  /** Its attempt (`etl.attempts.attempt_id`) that failed or succeeded. */
  attemptId?: string | undefined;
  /** How the run was started (schedule, manual …). */
  trigger?: string | undefined;
  /** Stable error code (`etl.run_errors.error_kind`) of a failure. */
  errorKind?: string | undefined;
  /** The error's first meaningful line (failure-text.ts): the server's own words when it sent some, else ours. */
  error?: string | undefined;
  /** The whole error text, every line of it. */
  errorText?: string | undefined;
  /** The run's page on the admin server (ADMIN_PUBLIC_URL), when it is known. */
  url?: string | undefined;
  /** Last success (ISO 8601), for `stale` and `recovered`. */
  lastSuccessAt?: string | undefined;
  /** The job's freshness (`26h`), for `stale`. */
  freshness?: string | undefined;
  /** Since when the job was failing (ISO 8601), for `recovered`. */
  failingSince?: string | undefined;
}

const TITLES: Record<AlertEvent, string> = {
  failed: 'failed',
  recovered: 'recovered',
  stale: 'is stale',
  login_required: 'needs a login',
};

/** One line for humans: `report-etl: job sales_orders failed (REPORT_FAILED): Report …`. */
export function summary(m: AlertMessage): string {
  const parts = [`report-etl: job ${m.job} ${TITLES[m.event]}`];
  if (m.event === 'failed' || m.event === 'login_required') {
    parts.push(`${m.errorKind ? ` (${m.errorKind})` : ''}${m.error ? `: ${m.error}` : ''}`);
    if (m.event === 'login_required') parts.push(': run `report-etl login <connection>` as the product user');
  }
  if (m.event === 'stale')
    parts.push(`: no successful run for more than ${m.freshness ?? '?'} (last success ${m.lastSuccessAt ?? 'never'})`);
  if (m.event === 'recovered') parts.push(`: a run succeeded after failures since ${m.failingSince ?? '?'}`);
  if (m.runKey)
    parts.push(` (run ${m.runKey}${m.attemptId && m.attemptId !== m.runKey ? `, attempt ${m.attemptId}` : ''})`);
  else if (m.attemptId) parts.push(` (attempt ${m.attemptId})`);
  return parts.join('');
}

/**
 * A receiver's key to drop an alert it got twice (one in flight is sent again after a kill -9): 32 hex digits of
 * the event, job, run key and attempt, and for `stale` the last success; never of the time or the texts.
 */
export function alertId(m: AlertMessage): string {
  const key = [m.event, m.job, m.runKey ?? '', m.attemptId ?? '', m.event === 'stale' ? (m.lastSuccessAt ?? '') : ''];
  return createHash('sha256').update(JSON.stringify(key)).digest('hex').slice(0, 32);
}

/**
 * The JSON body of `m` in `format`, each with `id` ({@link alertId}):
 * - `generic`: `{ source: "report-etl", id, event, job, at, summary, runKey?, attemptId?, trigger?, errorKind?,
 *   error?, errorText? (the whole text), url? (the run's page), … }`
 * - `slack`: `{ text, id }` (Slack incoming webhooks, also Mattermost and Rocket.Chat)
 * - `teams`: `{ type: "message", id, attachments: [{ contentType: "application/vnd.microsoft.card.adaptive",
 *   content }] }`
 */
export function alertBody(m: AlertMessage, format: AlertFormat): unknown {
  const text = summary(m);
  const id = alertId(m);
  if (format === 'slack') {
    // The whole text, as written, below the one-line summary; the run's page as a link of ours.
    const whole =
      m.errorText && m.errorText.trim() !== (m.error ?? '')
        ? `\n\`\`\`${escapeSlack(m.errorText.replaceAll('```', "'''"))}\`\`\``
        : '';
    const link = m.url ? `\n<${m.url}|Open the run>` : '';
    return {
      text: `${m.event === 'recovered' ? ':large_green_circle:' : ':red_circle:'} ${escapeSlack(text)}${whole}${link}`,
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
      'last success': m.lastSuccessAt,
    }).filter(([, v]) => v !== undefined);
    // RichTextBlock, not TextBlock: it renders no Markdown, so the server's words show as written and cannot make a
    // link (`[Click here](https://…)`) or emphasis.
    return {
      type: 'message',
      id,
      attachments: [
        {
          contentType: 'application/vnd.microsoft.card.adaptive',
          content: {
            $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
            type: 'AdaptiveCard',
            version: '1.4',
            body: [
              {
                type: 'RichTextBlock',
                inlines: [
                  { type: 'TextRun', text, weight: 'Bolder', color: m.event === 'recovered' ? 'Good' : 'Attention' },
                ],
              },
              ...facts.map(([title, value]) => ({
                type: 'RichTextBlock',
                inlines: [
                  { type: 'TextRun', text: `${title}: `, weight: 'Bolder' },
                  { type: 'TextRun', text: String(value) },
                ],
              })),
              ...(m.errorText
                ? [{ type: 'RichTextBlock', inlines: [{ type: 'TextRun', text: m.errorText, fontType: 'Monospace' }] }]
                : []),
            ],
            ...(m.url ? { actions: [{ type: 'Action.OpenUrl', title: 'Open the run', url: m.url }] } : {}),
          },
        },
      ],
    };
  }
  return { source: 'report-etl', id, ...m, summary: text };
}

/**
 * Text for a Slack message, as Slack asks: `&`, `<` and `>` escaped, so that the server's words cannot ping a channel
 * (`<!channel>`), mention someone or show a disguised link (`<https://evil.example|Click here>`).
 */
export function escapeSlack(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}
