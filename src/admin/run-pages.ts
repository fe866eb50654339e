/**
 * The run history pages for on-call staff: the run list (logical runs, with their attempt counts) and one run's page
 * (what it was asked to do, how it stands, its attempts), as HTML strings from the rows of src/history. The page of
 * one attempt is attempt-page.ts. Words: docs/architecture.md "Vocabulary".
 */
import { QUEUE_NAME } from '../queue/names.ts';
import type { AttemptListRow, RunErrorRow } from '../history/attempt-list.ts';
import type { AttemptRow } from '../history/attempts.ts';
import type { RunDocument } from '../history/run-documents.ts';
import type { RunListFilter, RunListRow } from '../history/run-list.ts';
import type { RunRow } from '../history/runs.ts';
import { isReverted, type RevertRow } from '../history/reverts.ts';
import type { AttemptArchive } from '../history/page-archive.ts';
import type { ReplayRefusal } from '../queue/replay.ts';
import { ATTEMPT_STATUSES } from '../vocabulary.ts';
import { formatTime } from '../time-text.ts';
import { failureHint } from '../failure-hints.ts';
import { readProgress, stoppedAtWords } from '../history/attempt-progress.ts';
import { traceUrl } from '../trace-link.ts';
import { shellQuote } from '../shell-quote.ts';
import { BULL_BOARD_PATH } from './bull-board.ts';
import { banner, COLUMNS, escapeHtml, formatCount, html, page, SafeHtml, table } from './html.ts';
import { timelineChart, type ChartAttempt } from './timeline-chart.ts';
import { requestSection, scheduledForText } from './request-section.ts';

/**
 * A trace id as code, linked to the trace when `REPORT_ETL_TRACE_URL` is set (docs/observability.md "Tracing"); the
 * link opens in a new tab and sends no referrer.
 */
export function traceIdHtml(traceId: string): SafeHtml {
  const url = traceUrl(traceId);
  const code = html`<code>${traceId}</code>`;
  return url ? html`<a class="trace-link" href="${url}" target="_blank" rel="noopener noreferrer">${code}</a>` : code;
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

/** Path of the page of a logical run. */
export function runPath(job: string, runKey: string): string {
  return `/admin/runs/${encodeURIComponent(job)}/${encodeURIComponent(runKey)}`;
}

/** A job's name, linked to its runs on the run list. */
export function jobRunsLink(job: string): SafeHtml {
  return html`<a href="/admin/runs?job=${encodeURIComponent(job)}">${job}</a>`;
}

/** Path of the page of one attempt. */
export function attemptPath(attemptId: string): string {
  return `/admin/attempts/${encodeURIComponent(attemptId)}`;
}

/** A status as a coloured word; a run without an attempt yet says so. */
export function statusLabel(s: string | null): SafeHtml {
  return s === null ? html`<span class="muted">no attempt yet</span>` : html`<span class="s-${s}">${s}</span>`;
}

/** Whether a run can be replayed: its newest attempt failed or was interrupted. */
export function replayable(run: Pick<RunRow, 'status'>): boolean {
  return run.status === 'failed' || run.status === 'interrupted';
}

/**
 * The Replay button of a run (POST to its replay route): the page's primary button unless `className` says otherwise
 * (`secondary`: for a failure a replay alone does not cure).
 */
export function replayButton(
  run: Pick<RunRow, 'job' | 'run_key'>,
  attrs: { id?: string; className?: string; label?: string } = {},
): SafeHtml {
  const id = attrs.id ? html` id="${attrs.id}"` : '';
  return html`<form class="inline" method="post" action="${runPath(run.job, run.run_key)}/replay">\
<button type="submit"${id} class="${attrs.className ?? 'primary'}">${attrs.label ?? 'Replay run'}</button></form>`;
}

/**
 * The "Replay from kept pages" button of a run whose newest complete kept pages are `kept`'s (docs/operations.md
 * "Kept pages"): it posts `from=pages` to the run's replay route, which queues what `replay --from-pages` queues.
 */
export function keptPagesButton(
  run: Pick<RunRow, 'job' | 'run_key'>,
  kept: Pick<AttemptArchive, 'attempt'>,
  className = 'primary',
): SafeHtml {
  return html`<form class="inline" method="post" action="${runPath(run.job, run.run_key)}/replay">\
<input type="hidden" name="from" value="pages"><button type="submit" id="replay-from-pages" class="${className}" \
title="Loads the pages attempt ${kept.attempt} kept, with no request to the server">Replay from kept pages</button>\
</form> <span class="muted kept-pages-note">(the pages attempt ${kept.attempt} kept: no request to the server)</span>`;
}

/**
 * What stands instead of "Replay from kept pages" on a run whose newest attempt its guard stopped (docs/operations.md
 * "Kept pages"): such a replay trips the same guard, and the admin has no accept-guard button, so one sentence names
 * the command that accepts the reviewed pages, its run key shell-quoted.
 */
export function acceptGuardNote(run: Pick<RunRow, 'run_key'>): SafeHtml {
  return html`<p class="muted accept-guard-note" id="accept-guard-note">A replay from kept pages trips the same \
guard: once you have reviewed the pages, <code>report-etl replay ${shellQuote(run.run_key)} --accept-guard</code> \
loads them past it.</p>`;
}

/** Whether `f` is a failure its guard stopped (GUARD_TRIPPED): replaying the same pages can only trip it again. */
export function guardTripped(f: NewestFailure | undefined): boolean {
  return f?.attempt.status === 'failed' && f.error?.error_kind === 'GUARD_TRIPPED';
}

/** Text with the docs' backticks as `<code>`, everything escaped. */
export function withCode(text: string): SafeHtml {
  return new SafeHtml(escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>'));
}

/** The failure a run's page leads with: its newest attempt (failed or interrupted) and the error recorded for it. */
export interface NewestFailure {
  attempt: Pick<AttemptRow, 'attempt' | 'attempt_id' | 'status' | 'error' | 'pages' | 'rows'> &
    Partial<Pick<AttemptRow, 'progress' | 'trace_id'>>;
  /** The attempt's last etl.run_errors row; none for an attempt recorded without one. */
  error?: RunErrorRow | undefined;
}

/**
 * Error kinds not retried only because nothing was left to retry the run (Redis lost its queue job): a plain replay is
 * their cure, nothing has to change first (docs/operations.md "Redis in production").
 */
const REPLAY_CURES: ReadonlySet<string> = new Set(['QUEUE_JOB_LOST']);

/**
 * Whether a replay alone cannot cure `f`: its attempt failed (not interrupted) with an error not retryable, other
 * than one of {@link REPLAY_CURES}.
 */
export function needsChangeFirst(f: NewestFailure | undefined): boolean {
  return (
    f?.attempt.status === 'failed' &&
    f.error !== undefined &&
    !f.error.retryable &&
    !REPLAY_CURES.has(f.error.error_kind)
  );
}

/**
 * A run's Replay: the primary button; for a failure that is not retryable, what must change first and a secondary
 * button (a replay of the unchanged run fails the same way); for a job gone from jobs.yaml, a note instead. With
 * `kept` (the run's newest complete kept pages), "Replay from kept pages" beside it ({@link keptPagesButton}), except
 * after a guard trip, which gets {@link acceptGuardNote} instead.
 */
export function replayOffer(
  run: Pick<RunRow, 'job' | 'run_key'>,
  failure: NewestFailure | undefined,
  jobGone: boolean,
  kept?: Pick<AttemptArchive, 'attempt'>,
): SafeHtml {
  if (jobGone) {
    return html`<p class="muted" id="no-replay">Job ${run.job} is no longer in jobs.yaml: add it back to replay its \
runs.</p>`;
  }
  if (!needsChangeFirst(failure))
    return kept
      ? html`${replayButton(run, { id: 'replay' })} ${keptPagesButton(run, kept, 'secondary')}`
      : replayButton(run, { id: 'replay' });
  const hint = failureHint(failure!.error!.error_kind);
  const first = hint ? html` First: ${withCode(hint.todo)}.` : '';
  return html`<div class="replay-advice" id="replay-advice"><p><strong>${failure!.error!.error_kind} is not \
retried:</strong> a replay of the unchanged run fails the same way.${first}</p>\
${replayButton(run, { id: 'replay', className: 'secondary', label: 'Replay once that is changed' })}\
${guardTripped(failure) ? acceptGuardNote(run) : kept ? html` ${keptPagesButton(run, kept, 'secondary')}` : ''}</div>`;
}

/** A queue job's id, linked to it on bull-board. */
const queueJobLink = (id: string) =>
  html`<a href="${BULL_BOARD_PATH}/queue/${encodeURIComponent(QUEUE_NAME)}/${encodeURIComponent(id)}"><code>${id}\
</code></a>`;

/** Milliseconds from a run's first attempt's start to its last finish, or null while unknown or running. */
function runDurationMs(r: RunRow): number | null {
  if (!r.first_started_at || !r.last_finished_at || r.status === 'running') return null;
  return r.last_finished_at.getTime() - r.first_started_at.getTime();
}

function filterForm(f: RunListFilter, jobs: string[]): SafeHtml {
  const option = (v: string, chosen: string | undefined) =>
    html`<option value="${v}"${chosen === v ? html` selected` : ''}>${v}</option>`;
  return html`<form method="get" action="/admin/runs">
<label>Job <select name="job"><option value="">all</option>${jobs.map((j) => option(j, f.job))}</select></label>
<label>Status of the newest attempt <select name="status"><option value="">all</option>\
${ATTEMPT_STATUSES.map((s) => option(s, f.status))}</select></label>
<label>Per job <input name="limit" type="number" min="1" max="200" value="${f.perJob}" size="4"></label>
<button type="submit">Filter</button></form>`;
}

function runListRow(r: RunListRow, zone: string | undefined): SafeHtml {
  const reverted = r.reverted_at ? html` <span class="muted reverted">(reverted)</span>` : '';
  return html`<tr><td><a href="${runPath(r.job, r.run_key)}">${r.run_key}</a></td>\
<td>${formatTime(r.first_started_at ?? r.created_at, zone)}</td><td>${statusLabel(r.status)}${reverted}</td>\
<td>${r.trigger}</td><td class="num attempts">${r.attempts}</td>\
<td class="num">${formatDuration(runDurationMs(r))}</td><td class="num">${formatCount(r.rows)}</td>\
<td>${r.error_first_line ?? ''}</td></tr>
`;
}

/**
 * The run list: per job its latest logical runs, each with the first start, the newest attempt's status and first
 * error line, the trigger, the attempts, the duration from first start to last finish and the rows loaded.
 * @param rows from listRecentRuns, ordered by job then newest first
 * @param zoneOf a job's time zone (its schedule's), undefined (UTC) for a job jobs.yaml no longer has
 */
export function renderRunList(
  rows: RunListRow[],
  f: RunListFilter,
  jobs: string[],
  zoneOf: (job: string) => string | undefined = () => undefined,
): string {
  const byJob = new Map<string, RunListRow[]>();
  for (const r of rows) (byJob.get(r.job) ?? byJob.set(r.job, []).get(r.job)!).push(r);
  const sections = [...byJob].map(
    ([job, runs]) => html`<h2>${jobRunsLink(job)}</h2>\
${table(
  { class: 'runs' },
  COLUMNS.runs,
  runs.map((r) => runListRow(r, zoneOf(r.job))),
)}`,
  );
  const empty = rows.length === 0 ? html`<p>No runs match.</p>` : '';
  const intro = html`<p class="muted">One line per run (its run key): every retry and replay of it is one of its \
attempts. Times are in each job's time zone, with its UTC offset.</p>`;
  return page('Runs', html`${intro}${filterForm(f, jobs)}${empty}${sections}`);
}

/** What the run page shows above the run: the outcome of a replay request. */
interface RunPageNotice {
  /** BullMQ job id of the queued replay: the route passes it only when the queue holds it, as a replay of this run. */
  replayedJobId?: string | undefined;
  /** Why a replay could not be queued: a key of {@link REPLAY_ERRORS}; any other value is ignored. */
  replayError?: string | undefined;
  /** The run's job is no longer in jobs.yaml: nothing could run a replay, so none is offered. */
  jobGone?: boolean | undefined;
}

/**
 * What the run page says for each `?replayError=` code: queue/replay.ts's refusals, `guard-tripped` for a replay
 * from kept pages after a guard trip (run-routes.ts), and `failed` for anything else (the admin server's log has the
 * text). The page shows only these words, never text from the URL.
 */
export const REPLAY_ERRORS: Readonly<Record<ReplayRefusal | 'guard-tripped' | 'failed', string>> = {
  'no-run': 'the run history has no such run.',
  'no-attempt': 'the run has no attempt yet (it is queued or waits for a report slot): nothing to replay.',
  running: 'its newest attempt is still running: wait for it to end.',
  succeeded: 'the run succeeded: nothing to replay.',
  'not-guarded': "the run's target guard did not stop it: replay it without accepting the guard.",
  'job-gone': "the run's job is no longer in jobs.yaml: add it back to replay its runs.",
  'no-kept-pages':
    'the run has no complete kept pages (target.archive was off, its reading stopped early, or keepDays ran out): ' +
    'replay it from the server.',
  'guard-tripped':
    "its target's guard stopped it, and a replay from kept pages trips it again: once you have reviewed the pages, " +
    'report-etl replay <run key> --accept-guard loads them past it.',
  failed: 'the queue did not take it: the admin server\'s log line "replay from the admin page refused" says why.',
};

function replayBanner(notice: RunPageNotice): SafeHtml | '' {
  if (notice.replayedJobId) return banner('notice', html`Replay queued as job ${queueJobLink(notice.replayedJobId)}.`);
  const code = notice.replayError;
  return code !== undefined && Object.hasOwn(REPLAY_ERRORS, code)
    ? banner('problem', `Replay not queued: ${REPLAY_ERRORS[code as keyof typeof REPLAY_ERRORS]}`, 'replay-error')
    : '';
}

/** The documents an attempt archived, each a download link (`/admin/attempts/:attemptId/documents/:page`). */
export function documentTable(attemptId: string, documents: RunDocument[]): SafeHtml | '' {
  if (documents.length === 0) return '';
  const row = (d: RunDocument) => html`<tr><td class="num">${d.page}</td>\
<td><a href="${attemptPath(attemptId)}/documents/${d.page}" download="${d.fileName}">${d.fileName}</a></td>\
<td>${d.contentType}</td><td class="num">${formatCount(d.bytes)}</td>\
<td><code>${d.sha256.slice(0, 16)}…</code></td></tr>
`;
  const columns = ['Page', 'File', 'Type', 'Bytes', 'sha256'];
  return html`<h2>Documents</h2>${table({ id: 'documents' }, columns, documents.map(row))}`;
}

/** The reverts of an append run (etl.reverts), newest first, with a note when the run stands reverted. */
function revertTable(run: Pick<RunRow, 'attempts'>, reverts: RevertRow[], zone?: string): SafeHtml | '' {
  if (reverts.length === 0) return '';
  const last = reverts[0]!;
  const note = isReverted(run, reverts)
    ? html`<p class="notice" id="reverted" role="status">Reverted at ${formatTime(last.reverted_at, zone)}: its \
${formatCount(last.rows)} rows were removed from ${last.target_table}. A replay appends the run again.</p>`
    : '';
  const row = (v: RevertRow) => html`<tr><td>${formatTime(v.reverted_at, zone)}</td>\
<td class="num">${formatCount(v.rows)}</td><td class="num">${formatCount(v.appended_rows)}</td>\
<td>${v.target_table}</td><td><a href="${attemptPath(v.attempt_id)}">${v.attempt_id.slice(0, 8)}</a></td>\
<td>${v.reverted_by ?? ''}</td></tr>
`;
  const columns = ['Reverted', 'Rows removed', 'Of rows appended', 'Table', 'Appended by attempt', 'By'];
  return html`<h2>Reverts</h2>${note}${table({ id: 'reverts' }, columns, reverts.map(row))}`;
}

/** The attempts of a run, newest first, each linked to its page; times in `zone`. */
export function attemptTable(attempts: AttemptListRow[], zone?: string): SafeHtml {
  const row = (a: AttemptListRow) => html`<tr><td class="num">${a.attempt}</td>\
<td><a href="${attemptPath(a.attempt_id)}">${a.attempt_id.slice(0, 8)}</a></td>\
<td>${formatTime(a.started_at, zone)}</td><td>${statusLabel(a.status)}</td><td>${a.trigger}</td>\
<td class="num">${formatDuration(a.duration_ms)}</td><td class="num">${formatCount(a.rows)}</td>\
<td>${a.worker ?? ''}</td><td>${a.error_first_line ?? ''}</td></tr>
`;
  return table({ id: 'attempts' }, COLUMNS.attempts, attempts.map(row));
}

/** An attempt as the timeline chart draws it: its heading links to its page. */
export function chartAttempt(a: AttemptRow, zone?: string): ChartAttempt {
  const took = a.duration_ms !== null ? `, ${formatDuration(a.duration_ms)}` : '';
  return {
    heading: html`<a href="${attemptPath(a.attempt_id)}">Attempt ${a.attempt}</a> ${statusLabel(a.status)} \
<span class="muted">started ${formatTime(a.started_at, zone)}${took}</span>`,
    status: a.status,
    startedAt: a.started_at,
    finishedAt: a.finished_at,
    timeline: a.timeline,
    done: {
      pages: a.pages,
      rows: a.rows,
      reportJobStarted: a.report_job_id !== null,
      progress: readProgress(a.progress),
    },
  };
}

/** Attempts drawn on a run's timeline at most: the newest ones. */
const TIMELINE_ATTEMPTS = 5;

/** "Where the time went": the run's newest attempts, oldest first, each on its own time axis. */
function runTimeline(attempts: AttemptRow[], zone?: string): SafeHtml | '' {
  if (attempts.length === 0) return '';
  const drawn = [...attempts].sort((a, b) => a.started_at.getTime() - b.started_at.getTime()).slice(-TIMELINE_ATTEMPTS);
  const left = attempts.length - drawn.length;
  const note = html`<p class="muted">The ${drawn.length} newest of ${attempts.length} attempts; each attempt's page \
draws it alone.</p>`;
  return html`<h2 id="timeline">Where the time went</h2>${left > 0 ? note : ''}\
${timelineChart(drawn.map((a) => chartAttempt(a, zone)))}`;
}

/** What an attempt that did not finish had done: its pages read and rows; nothing for a failure before any page. */
function doneSoFar(a: NewestFailure['attempt']): string {
  // Without figures of its own (a killed attempt: the janitor closed it), what it recorded as it read.
  const progress = a.pages === null ? readProgress(a.progress) : undefined;
  if (progress) return `${stoppedAtWords(progress, formatCount)}, nothing committed`;
  if (!a.pages && a.status !== 'interrupted') return '';
  return `${formatCount(a.pages ?? 0)} pages read, ${formatCount(a.rows ?? 0)} rows`;
}

/**
 * "Why it failed": the newest attempt's code, stage, whether a retry can help, the server's whole text (as recorded:
 * bounded, docs/architecture.md "Errors") and what docs/troubleshooting.md says it means and what to do.
 */
function failureSection(f: NewestFailure): SafeHtml {
  const { attempt: a, error: e } = f;
  const link = html`<a href="${attemptPath(a.attempt_id)}">attempt ${a.attempt}</a>`;
  const hint = failureHint(e?.error_kind);
  const retry = !e
    ? ''
    : e.retryable
      ? 'yes: retried automatically while the job has attempts left'
      : REPLAY_CURES.has(e.error_kind)
        ? 'no: nothing is left to retry it; a replay runs it again'
        : 'no: the same failure comes back until something changes';
  const text = e ? (e.server_message ?? e.message) : a.error;
  const textTitle = e?.server_message ? html`The server's message` : html`Message`;
  const done = doneSoFar(a);
  const verb = a.status === 'interrupted' ? 'stopped' : 'failed';
  const where = e ? html`at stage <span class="stage">${e.stage}</span>: <code>${e.error_kind}</code>` : a.status;
  const status = e?.http_status ? html`<dt>HTTP status</dt><dd>${e.http_status}</dd>` : '';
  const doneField = done ? html`<dt>Done before it stopped</dt><dd class="done">${done}</dd>` : '';
  const trace = a.trace_id ? html`<dt>Trace</dt><dd class="trace-id">${traceIdHtml(a.trace_id)}</dd>` : '';
  const textBlock = text ? html`<h3>${textTitle}</h3><pre class="failure-text">${text}</pre>` : '';
  const hintBlock = hint
    ? html`<p class="hint"><strong>What it means:</strong> ${withCode(hint.means)}.<br>\
<strong>What to do:</strong> ${withCode(hint.todo)}.</p>`
    : '';
  return html`<section id="failure" class="failure-box"><h2>Why it ${verb}: ${link} ${where}</h2>
<dl><dt>Code</dt><dd class="code">${e?.error_kind ?? ''}</dd><dt>Stage</dt><dd class="stage">${e?.stage ?? ''}</dd>
<dt>Retryable</dt><dd class="retryable">${retry}</dd>${status}${doneField}${trace}</dl>
${textBlock}${hintBlock}<p class="muted">Every error of the attempt, with the problem details: ${link}'s page.</p>\
</section>`;
}

/** When a queued run was queued and how long it waited for a worker; nothing for a foreground run. */
function queuedField(run: RunRow, zone?: string): SafeHtml | string {
  if (!run.queued_at) return '';
  const waited = formatDuration(Math.max(0, run.created_at.getTime() - run.queued_at.getTime()));
  return html`<dt>Queued</dt><dd class="queued">${formatTime(run.queued_at, zone)} <span class="muted">(a worker \
began it ${waited} later)</span></dd>`;
}

/**
 * One logical run: what it was asked to do, how it stands, its attempts with their errors' first lines, the
 * documents it loaded, its reverts, and a Replay button when its newest attempt failed or was interrupted, or its
 * rows were reverted.
 * @param documents those of the attempt that loaded the run (`loadingAttemptId`)
 * @param zone the job's time zone, for its times (UTC when not given)
 * @param reverts the run's reverts (`report-etl revert`), newest first
 * @param failure the newest attempt's failure, when the run stands failed or interrupted: the page leads with it
 * @param kept the run's newest complete kept pages (history/page-archive.ts newestCompleteArchive): Replay from them
 *   is offered beside Replay
 */
export function renderRunPage(
  run: RunRow,
  attempts: AttemptListRow[],
  notice: RunPageNotice = {},
  loadingAttemptId?: string,
  documents: RunDocument[] = [],
  zone?: string,
  reverts: RevertRow[] = [],
  failure?: NewestFailure,
  kept?: Pick<AttemptArchive, 'attempt'>,
): string {
  const t = (d: Date | null) => formatTime(d, zone);
  const queueJob = run.queue_job_id
    ? queueJobLink(run.queue_job_id)
    : html`<span class="muted">none (a foreground report-etl run)</span>`;
  const interval = run.logical_start || run.logical_end ? `${t(run.logical_start)} – ${t(run.logical_end)}` : '';
  const parameters = run.parameters ? html`<code>${JSON.stringify(run.parameters)}</code>` : '';
  const fields = html`<dl>
<dt>Job</dt><dd>${jobRunsLink(run.job)}</dd>\
<dt>Run key</dt><dd class="run-key">${run.run_key}</dd>
<dt>Status</dt><dd class="status">${statusLabel(run.status)} <span class="muted">(its newest attempt's)</span></dd>\
<dt>Attempts</dt><dd class="attempts">${run.attempts}</dd>
<dt>Trigger</dt><dd>${run.trigger}</dd>\
<dt>Scheduled for</dt><dd class="scheduled-for">${scheduledForText(run.scheduled_for, run.logical_end, zone)}</dd>
<dt>Logical interval</dt><dd>${interval}</dd><dt>Parameters</dt><dd>${parameters}</dd>
<dt>Queue job</dt><dd>${queueJob}</dd>${queuedField(run, zone)}<dt>First started</dt><dd>${t(run.first_started_at)}</dd>
<dt>Last finished</dt><dd>${t(run.last_finished_at)}</dd><dt>Rows</dt><dd class="rows">${formatCount(run.rows)}</dd>
</dl>`;
  const offered = replayable(run) || isReverted(run, reverts);
  const shown = replayable(run) ? failure : undefined;
  const replay = !offered ? '' : replayOffer(run, shown, notice.jobGone === true, kept);
  const list = attempts.length
    ? html`<h2>Attempts</h2>${attemptTable(attempts, zone)}`
    : html`<p>No attempt recorded yet: the run is queued or waits for a report slot.</p>`;
  const docs = loadingAttemptId ? documentTable(loadingAttemptId, documents) : '';
  const sent = attempts[0] ? requestSection(attempts[0], zone, `What attempt ${attempts[0].attempt} sent`) : '';
  const lead = shown ? failureSection(shown) : '';
  const body = html`${replayBanner(notice)}${lead}${replay}${fields}${sent}${revertTable(run, reverts, zone)}${list}\
${runTimeline(attempts, zone)}${docs}`;
  return page(`Run ${run.job} ${run.run_key}`, body);
}
