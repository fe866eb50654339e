/**
 * The run history pages for on-call staff (docs/architecture.md): the run list and one run's page, rendered to HTML strings.
 * Pure functions of the rows read by history/run-list.ts; every value is escaped.
 */
import { QUEUE_NAME } from '../queue/names.ts';
import type { AttemptRow } from '../history/attempts.ts';
import { ATTEMPT_STATUSES } from '../vocabulary.ts';
import { BULL_BOARD_PATH } from './bull-board.ts';
import { html, page, type SafeHtml } from './html.ts';
import type { RunErrorRow, RunListFilter, RunListRow } from '../history/run-list.ts';
import type { RunDocument } from '../history/run-documents.ts';

/** The statuses the filter offers (etl.runs.status). */

/** A time as `2026-01-22 02:15:00Z` (UTC), or an empty string. */
export function formatTime(t: Date | null | undefined): string {
  return t ? `${t.toISOString().slice(0, 19).replace('T', ' ')}Z` : '';
}

/** A duration in ms as `850 ms`, `12.3 s` or `4 min 05 s`; empty when unknown. */
export function formatDuration(ms: string | number | null | undefined): string {
  if (ms === null || ms === undefined) return '';
  const n = Number(ms);
  if (n < 1000) return `${n} ms`;
  if (n < 60_000) return `${(n / 1000).toFixed(1)} s`;
  const s = Math.round(n / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

/** A count with thin thousands separators (`1 234 567`); empty when unknown. */
export function formatCount(n: string | number | null | undefined): string {
  if (n === null || n === undefined) return '';
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, '\u202f');
}

function runLink(runId: string): SafeHtml {
  return html`<a href="/admin/runs/${encodeURIComponent(runId)}">${runId.slice(0, 8)}</a>`;
}

function status(s: string): SafeHtml {
  return html`<span class="s-${s}">${s}</span>`;
}

function filterForm(f: RunListFilter, jobs: string[]): SafeHtml {
  const jobOptions = jobs.map((j) => html`<option value="${j}"${f.job === j ? html` selected` : ''}>${j}</option>`);
  const statusOptions = ATTEMPT_STATUSES.map((s) => html`<option value="${s}"${f.status === s ? html` selected` : ''}>${s}</option>`);
  return html`<form method="get" action="/admin/runs">
<label>Job <select name="job"><option value="">all</option>${jobOptions}</select></label>
<label>Status <select name="status"><option value="">all</option>${statusOptions}</select></label>
<label>Per job <input name="limit" type="number" min="1" max="200" value="${f.perJob}" size="4"></label>
<button type="submit">Filter</button></form>`;
}

/**
 * The run list: per job its latest attempts (started, status, trigger, attempt, duration, rows, first error line).
 * @param rows from listRecentRuns, ordered by job then newest first
 */
export function renderRunList(rows: RunListRow[], f: RunListFilter, jobs: string[]): string {
  const byJob = new Map<string, RunListRow[]>();
  for (const r of rows) (byJob.get(r.job) ?? byJob.set(r.job, []).get(r.job)!).push(r);
  const sections = [...byJob].map(
    ([job, runs]) => html`<h2><a href="/admin/runs?job=${encodeURIComponent(job)}">${job}</a></h2>
<table><thead><tr><th>Run</th><th>Started</th><th>Status</th><th>Trigger</th><th>Attempt</th><th>Duration</th><th>Rows</th><th>Error</th></tr></thead><tbody>
${runs.map(
  (r) => html`<tr><td>${runLink(r.run_id)}</td><td>${formatTime(r.started_at)}</td><td>${status(r.status)}</td><td>${r.trigger}</td><td class="num">${r.attempt}</td><td class="num">${formatDuration(r.duration_ms)}</td><td class="num">${formatCount(r.rows)}</td><td>${r.error_first_line ?? ''}</td></tr>
`,
)}</tbody></table>`,
  );
  const empty = rows.length === 0 ? html`<p>No runs match.</p>` : '';
  return page('Runs', html`${filterForm(f, jobs)}${empty}${sections}`);
}

/** What the run page shows above the run: the outcome of a replay request. */
export interface RunPageNotice {
  /** BullMQ job id of the queued replay. */
  replayedJobId?: string | undefined;
  /** Why a replay could not be queued. */
  replayError?: string | undefined;
}

function prettyJson(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
}

function errorSection(e: RunErrorRow): SafeHtml {
  return html`<section class="run-error"><h2>Error at stage ${e.stage}: ${e.error_kind}</h2>
<dl><dt>Occurred</dt><dd>${formatTime(e.occurred_at)}</dd><dt>HTTP status</dt><dd class="http-status">${e.http_status ?? '—'}</dd>
<dt>Retryable</dt><dd>${e.retryable ? 'yes' : 'no'}</dd></dl>
<h3>Message</h3><pre class="message">${e.message}</pre>
${e.server_message !== null ? html`<h3>Server's message</h3><pre class="server-message">${e.server_message}</pre>` : ''}
${e.problem !== null && e.problem !== undefined ? html`<h3>Problem details</h3><pre class="problem-details">${prettyJson(e.problem)}</pre>` : ''}
${e.details !== null && e.details !== undefined ? html`<h3>Details</h3><pre class="details">${prettyJson(e.details)}</pre>` : ''}
</section>`;
}

/**
 * One attempt: its figures, every recorded error with the server's text verbatim, the other attempts of the same
 * logical run, and a Replay button (POST /admin/runs/:runId/replay) when it failed or was interrupted.
 */
export function renderRunPage(run: AttemptRow, errors: RunErrorRow[], attempts: AttemptRow[], notice: RunPageNotice = {}, documents: RunDocument[] = []): string {
  const banner = notice.replayedJobId
    ? html`<div class="notice" role="status">Replay queued as job <a href="${BULL_BOARD_PATH}/queue/${encodeURIComponent(QUEUE_NAME)}/${encodeURIComponent(notice.replayedJobId)}"><code>${notice.replayedJobId}</code></a>.</div>`
    : notice.replayError
      ? html`<div class="problem" role="alert">Replay not queued: ${notice.replayError}</div>`
      : '';
  const replayable = run.status === 'failed' || run.status === 'interrupted';
  const replay = replayable
    ? html`<form class="inline" method="post" action="/admin/runs/${encodeURIComponent(run.run_id)}/replay"><button type="submit" id="replay">Replay</button></form>`
    : '';
  const fields = html`<dl>
<dt>Run id</dt><dd>${run.run_id}</dd><dt>Job</dt><dd><a href="/admin/runs?job=${encodeURIComponent(run.job)}">${run.job}</a></dd>
<dt>Run key</dt><dd>${run.run_key}</dd><dt>Status</dt><dd class="status">${status(run.status)}</dd>
<dt>Trigger</dt><dd>${run.trigger}</dd><dt>Attempt</dt><dd>${run.attempt}</dd>
<dt>Scheduled for</dt><dd>${formatTime(run.scheduled_for)}</dd><dt>Started</dt><dd>${formatTime(run.started_at)}</dd>
<dt>Finished</dt><dd>${formatTime(run.finished_at)}</dd><dt>Duration</dt><dd>${formatDuration(run.duration_ms)}</dd>
<dt>Target</dt><dd>${run.target_table} (${run.write_mode})</dd><dt>Rows</dt><dd>${formatCount(run.rows)}</dd>
<dt>Pages</dt><dd>${run.pages ?? ''}</dd><dt>Bytes</dt><dd>${formatCount(run.bytes)}</dd>
<dt>Report job</dt><dd>${run.report_job_id ?? ''}</dd><dt>Worker</dt><dd>${(run as AttemptRow & { worker?: string | null }).worker ?? ''}</dd>
</dl>`;
  // etl.runs.error is our message plus the server's; the error rows below show both apart, so it is shown only
  // for attempts without a run_errors row.
  const errorText = run.error !== null && errors.length === 0 ? html`<h2>Error</h2><pre class="run-error-text">${run.error}</pre>` : '';
  const others = attempts.filter((a) => a.run_id !== run.run_id);
  const attemptTable = others.length
    ? html`<h2>Other attempts of this run</h2><table><thead><tr><th>Run</th><th>Started</th><th>Status</th><th>Trigger</th><th>Attempt</th><th>Error</th></tr></thead><tbody>
${others.map((a) => html`<tr><td>${runLink(a.run_id)}</td><td>${formatTime(a.started_at)}</td><td>${status(a.status)}</td><td>${a.trigger}</td><td class="num">${a.attempt}</td><td>${(a.error ?? '').split('\n')[0]}</td></tr>
`)}</tbody></table>`
    : '';
  const documentTable = documents.length
    ? html`<h2>Documents</h2><table id="documents"><thead><tr><th>Page</th><th>File</th><th>Type</th><th>Bytes</th><th>sha256</th></tr></thead><tbody>
${documents.map((d) => html`<tr><td class="num">${d.page}</td><td><a href="/admin/runs/${encodeURIComponent(run.run_id)}/documents/${d.page}" download="${d.fileName}">${d.fileName}</a></td><td>${d.contentType}</td><td class="num">${formatCount(d.bytes)}</td><td><code>${d.sha256.slice(0, 16)}…</code></td></tr>
`)}</tbody></table>`
    : '';
  return page(`Run ${run.job} ${formatTime(run.started_at)}`, html`${banner}${replay}${fields}${errorText}${errors.map(errorSection)}${documentTable}${attemptTable}`);
}
