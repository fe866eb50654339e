/**
 * The page of one attempt for on-call staff: its figures, every error recorded for it with the server's own words
 * verbatim (message, problem details), the documents it archived, the other attempts of its run, and the run's
 * Replay button while the run's newest attempt failed. Pure function of rows read by src/history; every value
 * escaped.
 */
import type { AttemptListRow, RunErrorRow } from '../history/attempt-list.ts';
import type { AttemptRow } from '../history/attempts.ts';
import type { RunDocument } from '../history/run-documents.ts';
import type { RunRow } from '../history/runs.ts';
import { html, page, type SafeHtml } from './html.ts';
import {
  attemptTable,
  chartAttempt,
  documentTable,
  formatCount,
  formatDuration,
  formatTime,
  jobGoneNote,
  replayable,
  replayButton,
  runPath,
  statusLabel,
} from './run-pages.ts';
import { timelineChart } from './timeline-chart.ts';

function prettyJson(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
}

/**
 * A SCHEMA_CHANGED error's difference as a table (docs/loaded-tables.md "Guards and schema changes"): each column
 * added, missing or of another type, with what the table has and what the run brought. Empty for other errors.
 */
function schemaDifferenceTable(e: RunErrorRow): SafeHtml | '' {
  const d = e.details as { added?: unknown; missing?: unknown; typeChanged?: unknown } | null;
  if (e.error_kind !== 'SCHEMA_CHANGED' || !d) return '';
  const names = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
  const changed = Array.isArray(d.typeChanged)
    ? (d.typeChanged as { column?: unknown; table?: unknown; declared?: unknown }[])
    : [];
  const rows = [
    ...names(d.added).map(
      (c) => html`<tr class="added"><td>${c}</td><td>added</td><td>—</td><td>in the report</td></tr>`,
    ),
    ...names(d.missing).map(
      (c) => html`<tr class="missing"><td>${c}</td><td>missing</td><td>in the table</td><td>—</td></tr>`,
    ),
    ...changed.map(
      (t) =>
        html`<tr class="type-changed"><td>${String(t.column)}</td><td>type changed</td><td>${String(t.table)}</td><td>${String(t.declared)} (declared)</td></tr>`,
    ),
  ];
  return html`<h3>Schema difference</h3><table class="schema-difference"><thead><tr><th>column</th><th>change</th><th>table</th><th>this run</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function errorSection(e: RunErrorRow, zone: string | undefined): SafeHtml {
  return html`<section class="run-error"><h2>Error at stage ${e.stage}: ${e.error_kind}</h2>
<dl><dt>Occurred</dt><dd>${formatTime(e.occurred_at, zone)}</dd><dt>HTTP status</dt><dd class="http-status">${e.http_status ?? '—'}</dd>
<dt>Retryable</dt><dd>${e.retryable ? 'yes' : 'no'}</dd></dl>
<h3>Message</h3><pre class="message">${e.message}</pre>
${schemaDifferenceTable(e)}
${e.server_message !== null ? html`<h3>Server's message</h3><pre class="server-message">${e.server_message}</pre>` : ''}
${e.problem !== null && e.problem !== undefined ? html`<h3>Problem details</h3><pre class="problem-details">${prettyJson(e.problem)}</pre>` : ''}
${e.details !== null && e.details !== undefined ? html`<h3>Details</h3><pre class="details">${prettyJson(e.details)}</pre>` : ''}
</section>`;
}

/**
 * One attempt of `run`.
 * @param attempts every attempt of the run (this one among them), newest first
 * @param zone the job's time zone, for its times (UTC when not given)
 */
export function renderAttemptPage(
  attempt: AttemptRow,
  run: RunRow,
  errors: RunErrorRow[],
  attempts: AttemptListRow[],
  documents: RunDocument[] = [],
  jobGone = false,
  zone?: string,
): string {
  const runLink = html`<a href="${runPath(run.job, run.run_key)}">${run.run_key}</a>`;
  const fields = html`<dl>
<dt>Attempt id</dt><dd class="attempt-id">${attempt.attempt_id}</dd><dt>Run</dt><dd class="run">${runLink} <span class="muted">(${run.job}; its status: ${statusLabel(run.status)})</span></dd>
<dt>Attempt</dt><dd>${attempt.attempt} of ${run.attempts}</dd><dt>Status</dt><dd class="status">${statusLabel(attempt.status)}</dd>
<dt>Trigger</dt><dd>${attempt.trigger}</dd><dt>Scheduled for</dt><dd>${formatTime(attempt.scheduled_for, zone)}</dd>
<dt>Started</dt><dd>${formatTime(attempt.started_at, zone)}</dd><dt>Finished</dt><dd>${formatTime(attempt.finished_at, zone)}</dd>
<dt>Duration</dt><dd>${formatDuration(attempt.duration_ms)}</dd><dt>Target</dt><dd>${attempt.target_table} (${attempt.write_mode})</dd>
<dt>Rows</dt><dd>${formatCount(attempt.rows)}</dd><dt>Pages</dt><dd>${attempt.pages ?? ''}</dd><dt>Bytes</dt><dd>${formatCount(attempt.bytes)}</dd>
<dt>Report job</dt><dd>${attempt.report_job_id ?? ''}</dd><dt>Worker</dt><dd>${attempt.worker ?? ''}</dd>
${attempt.accepted_guard ? html`<dt>Loaded past its guard</dt><dd class="accepted-guard">${attempt.accepted_guard} <span class="muted">(replay --accept-guard)</span></dd>` : ''}
<dt>Trace id</dt><dd class="trace-id">${attempt.trace_id ? html`<code>${attempt.trace_id}</code>` : html`<span class="muted">none (traces are exported when OTEL_EXPORTER_OTLP_ENDPOINT is set)</span>`}</dd>
</dl>`;
  // etl.attempts.error is our message plus the server's; the error rows below show both apart, so it is shown only
  // for attempts without a run_errors row.
  const errorText =
    attempt.error !== null && errors.length === 0
      ? html`<h2>Error</h2><pre class="run-error-text">${attempt.error}</pre>`
      : '';
  const replay = !replayable(run) ? '' : jobGone ? jobGoneNote(run) : replayButton(run, { id: 'replay' });
  const others = attempts.filter((a) => a.attempt_id !== attempt.attempt_id);
  const otherTable = others.length
    ? html`<h2>Other attempts of this run</h2>${attemptTable(others, undefined, zone)}`
    : '';
  return page(
    `Attempt ${attempt.attempt} of run ${run.job} ${run.run_key}`,
    html`${replay}${fields}${errorText}${errors.map((e) => errorSection(e, zone))}<h2 id="timeline">Where the time went</h2>${timelineChart([chartAttempt(attempt, zone)])}${documentTable(attempt.attempt_id, documents)}${otherTable}`,
  );
}
