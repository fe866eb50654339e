/**
 * The page of one attempt for on-call staff: its figures, every error recorded for it with the server's own words
 * verbatim, the documents it archived, the other attempts of its run, and the run's Replay button while the run's
 * newest attempt failed.
 */
import type { AttemptListRow, RunErrorRow } from '../history/attempt-list.ts';
import type { AttemptRow } from '../history/attempts.ts';
import type { RunDocument } from '../history/run-documents.ts';
import type { RunRow } from '../history/runs.ts';
import type { AttemptArchive } from '../history/page-archive.ts';
import { formatCount, html, page, table, type SafeHtml } from './html.ts';
import {
  attemptTable,
  chartAttempt,
  documentTable,
  formatDuration,
  replayable,
  replayOffer,
  traceIdHtml,
  runPath,
  statusLabel,
  type NewestFailure,
} from './run-pages.ts';
import { timelineChart } from './timeline-chart.ts';
import { requestSection, scheduledForText } from './request-section.ts';
import { readAttemptRequest } from '../history/attempt-request.ts';
import { formatTime } from '../time-text.ts';
import { readingWords, readProgress, stoppedAtWords } from '../history/attempt-progress.ts';

/** A SCHEMA_CHANGED error's difference as a table: each column added, missing or of another type. */
function schemaDifferenceTable(e: RunErrorRow): SafeHtml | '' {
  const d = e.details as { added?: unknown; missing?: unknown; typeChanged?: unknown } | null;
  if (e.error_kind !== 'SCHEMA_CHANGED' || !d) return '';
  const names = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
  const changed = Array.isArray(d.typeChanged)
    ? (d.typeChanged as { column?: unknown; table?: unknown; declared?: unknown }[])
    : [];
  const row = (cls: string, cells: unknown[]) => html`<tr class="${cls}">${cells.map((c) => html`<td>${c}</td>`)}</tr>`;
  const rows = [
    ...names(d.added).map((c) => row('added', [c, 'added', '—', 'in the report'])),
    ...names(d.missing).map((c) => row('missing', [c, 'missing', 'in the table', '—'])),
    ...changed.map((t) =>
      row('type-changed', [String(t.column), 'type changed', String(t.table), `${String(t.declared)} (declared)`]),
    ),
  ];
  const columns = ['column', 'change', 'table', 'this run'];
  return html`<h3>Schema difference</h3>${table({ class: 'schema-difference' }, columns, rows)}`;
}

/** A section `<h3>title</h3><pre class="cls">` of a value, pretty JSON unless a string; nothing without one. */
function preSection(title: SafeHtml, cls: string, value: unknown): SafeHtml | '' {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  return html`<h3>${title}</h3><pre class="${cls}">${text}</pre>`;
}

function errorSection(e: RunErrorRow, zone: string | undefined): SafeHtml {
  return html`<section class="run-error"><h2>Error at stage ${e.stage}: ${e.error_kind}</h2>
<dl><dt>Occurred</dt><dd>${formatTime(e.occurred_at, zone)}</dd>\
<dt>HTTP status</dt><dd class="http-status">${e.http_status ?? '—'}</dd>
<dt>Retryable</dt><dd>${e.retryable ? 'yes' : 'no'}</dd></dl>
<h3>Message</h3><pre class="message">${e.message}</pre>
${schemaDifferenceTable(e)}
${preSection(html`Server's message`, 'server-message', e.server_message)}
${preSection(html`Problem details`, 'problem-details', e.problem)}
${preSection(html`Details`, 'details', e.details)}
</section>`;
}

/**
 * How far an attempt without figures of its own got (a running one, or one whose process died), from
 * etl.attempts.progress: `stopped at page 33 of 40, 3 200 000 rows read, nothing committed` (or while the server
 * rendered the report), when it was recorded.
 */
function progressField(a: AttemptRow, zone?: string): SafeHtml | '' {
  const p = a.pages === null ? readProgress(a.progress) : undefined;
  if (!p) return '';
  const words =
    a.status === 'running' ? readingWords(p, formatCount) : `${stoppedAtWords(p, formatCount)}, nothing committed`;
  return html`<dt>Progress</dt><dd class="progress">${words} <span class="muted">(as recorded at \
${formatTime(new Date(p.at), zone)} while it ${p.page === 0 ? 'waited for the report' : 'loaded'})</span></dd>`;
}

/**
 * One attempt of `run`.
 * @param attempts every attempt of the run (this one among them), newest first
 * @param zone the job's time zone, for its times (UTC when not given)
 * @param failure the failure of the run's newest attempt: it decides how Replay is offered (run-pages.ts
 *   replayOffer)
 * @param kept the run's newest complete kept pages: Replay from them is offered beside Replay
 */
export function renderAttemptPage(
  attempt: AttemptRow,
  run: RunRow,
  errors: RunErrorRow[],
  attempts: AttemptListRow[],
  documents: RunDocument[] = [],
  jobGone = false,
  zone?: string,
  failure?: NewestFailure,
  kept?: Pick<AttemptArchive, 'attempt'>,
): string {
  const a = attempt;
  const t = (d: Date | null) => formatTime(d, zone);
  const runLink = html`<a href="${runPath(run.job, run.run_key)}">${run.run_key}</a>`;
  const guard = a.accepted_guard
    ? html`<dt>Loaded past its guard</dt><dd class="accepted-guard">${a.accepted_guard} \
<span class="muted">(replay --accept-guard)</span></dd>`
    : '';
  const traceId = a.trace_id
    ? traceIdHtml(a.trace_id)
    : html`<span class="muted">none (traces are exported when OTEL_EXPORTER_OTLP_ENDPOINT is set)</span>`;
  const scheduledFor = scheduledForText(a.scheduled_for, readAttemptRequest(a.request)?.logicalEnd, zone);
  const fields = html`<dl>
<dt>Attempt id</dt><dd class="attempt-id">${a.attempt_id}</dd>\
<dt>Run</dt><dd class="run">${runLink} <span class="muted">(${run.job}; its status: ${statusLabel(run.status)})\
</span></dd>
<dt>Attempt</dt><dd>${a.attempt} of ${run.attempts}</dd><dt>Status</dt><dd class="status">${statusLabel(a.status)}</dd>
<dt>Trigger</dt><dd>${a.trigger}</dd>\
<dt>Scheduled for</dt><dd class="scheduled-for">${scheduledFor}</dd>
<dt>Started</dt><dd>${t(a.started_at)}</dd><dt>Finished</dt><dd>${t(a.finished_at)}</dd>
<dt>Duration</dt><dd>${formatDuration(a.duration_ms)}</dd><dt>Target</dt><dd>${a.target_table} (${a.write_mode})</dd>
<dt>Rows</dt><dd>${formatCount(a.rows)}</dd><dt>Pages</dt><dd>${formatCount(a.pages)}</dd>${progressField(a, zone)}\
<dt>Bytes</dt><dd>${formatCount(a.bytes)}</dd>
<dt>Report job</dt><dd>${a.report_job_id ?? ''}</dd><dt>Worker</dt><dd>${a.worker ?? ''}</dd>
${guard}
<dt>Trace id</dt><dd class="trace-id">${traceId}</dd>
</dl>`;
  // etl.attempts.error is our message plus the server's, which the error rows show apart: shown only without them.
  const errorText =
    a.error !== null && errors.length === 0 ? html`<h2>Error</h2><pre class="run-error-text">${a.error}</pre>` : '';
  const replay = !replayable(run) ? '' : replayOffer(run, failure, jobGone, kept);
  const others = attempts.filter((o) => o.attempt_id !== a.attempt_id);
  const otherTable = others.length ? html`<h2>Other attempts of this run</h2>${attemptTable(others, zone)}` : '';
  const body = html`${replay}${fields}${errorText}${errors.map((e) => errorSection(e, zone))}${requestSection(a, zone)}\
<h2 id="timeline">Where the time went</h2>${timelineChart([chartAttempt(a, zone)])}\
${documentTable(a.attempt_id, documents)}${otherTable}`;
  return page(`Attempt ${a.attempt} of run ${run.job} ${run.run_key}`, body);
}
