/**
 * "What was sent": the section of the attempt and run pages that shows what an attempt asked the server for — the
 * logical interval it stood for and its report request as sent (mandant, report, output type, paging, the parameters
 * after their templates were rendered), from etl.attempts.request (history/attempt-request.ts). A function of its
 * own, so that a page places it where it fits.
 */
import { keptPagesText, readAttemptRequest } from '../history/attempt-request.ts';
import type { AttemptRow } from '../history/attempts.ts';
import { formatTime } from '../time-text.ts';
import { html, table, type SafeHtml } from './html.ts';

/**
 * The section `<section class="request-sent">` of `attempt`'s request: its interval and the report request with a
 * table of its parameters; a note for an attempt recorded before requests were kept, or one that failed before its
 * parameters were rendered. An attempt that loaded kept pages (`pages_from`, docs/operations.md "Kept pages") says it
 * sent nothing and which request those pages came from.
 * @param zone the job's time zone (time-text.ts formatTime)
 * @param heading the section's heading (the run page names whose attempt it is)
 */
export function requestSection(
  attempt: Pick<AttemptRow, 'request'> & Partial<Pick<AttemptRow, 'pages_from'>>,
  zone?: string,
  heading = 'What was sent',
): SafeHtml {
  const section = (body: SafeHtml) => html`<section class="request-sent"><h2>${heading}</h2>${body}</section>`;
  const r = readAttemptRequest(attempt.request);
  if (!r)
    return section(html`<p class="muted">Not recorded (an attempt from before report-etl kept what it sent).</p>`);
  const t = (iso: string) => formatTime(new Date(iso), zone);
  const interval =
    r.logicalStart === r.logicalEnd
      ? html`${t(r.logicalEnd)} <span class="muted">(no schedule: an instant, no interval)</span>`
      : html`(${t(r.logicalStart)}, ${t(r.logicalEnd)}]`;
  const fields = html`<dt>Logical interval</dt><dd class="interval">${interval}</dd><dt>Tick</dt><dd>${t(r.tick)}</dd>`;
  const pagesFrom = r.pagesFrom ?? attempt.pages_from;
  if (pagesFrom) {
    const text = keptPagesText(pagesFrom, r.pagesFrom ? r.report : undefined);
    return section(html`<dl>${fields}</dl><p class="pages-from">${text[0]!.toUpperCase()}${text.slice(1)}.</p>`);
  }
  if (!r.report) {
    return section(html`<dl>${fields}</dl><p class="muted">No report request was sent: the attempt failed before its \
parameters were rendered.</p>`);
  }
  const { mandant, name, outputType, paging, parameters } = r.report;
  const rows = Object.entries(parameters).map(
    ([k, v]) => html`<tr><th scope="row">${k}</th><td><code>${v}</code></td></tr>`,
  );
  const sent = rows.length
    ? table({ class: 'parameters-sent' }, ['Parameter', 'Value sent'], rows)
    : html`<p class="muted">No parameters.</p>`;
  return section(html`<dl>${fields}<dt>Report</dt><dd class="report-sent">${name} <span class="muted">(mandant \
${mandant}, ${outputType}, paging ${paging})</span></dd></dl>${sent}`);
}

/**
 * The "Scheduled for" of a run or attempt: its tick, else the logical time a run by hand stood for (its interval's
 * end, `--logical-time` or the latest complete interval), marked as such; empty when neither is known.
 */
export function scheduledForText(
  scheduledFor: Date | null,
  logicalEnd: Date | string | null | undefined,
  zone?: string,
): SafeHtml | string {
  if (scheduledFor) return formatTime(scheduledFor, zone);
  if (!logicalEnd) return '';
  return html`${formatTime(new Date(logicalEnd), zone)} <span class="muted">(logical time of a run by hand)</span>`;
}
