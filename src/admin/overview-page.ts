/**
 * The admin home page: the jobs overview for on-call staff. One line per jobs.yaml job with its state (healthy,
 * failing now, stale, invalid config, login required), its last attempt (linked to its run, with its number in
 * it), last success, next scheduled tick, and sparklines of the rows and the duration of its last attempts; a
 * Replay button on the run of a failing job's last failure; the jobs.yaml problems of an invalid job (file:line,
 * what, how to fix). Server-rendered, every value escaped.
 */
import type { RecentAttempt } from '../history/job-health.ts';
import { COLUMNS, headerRow, html, page, type SafeHtml } from './html.ts';
import { STATE_LABELS, type JobOverview } from './job-overview.ts';
import { formatCount, formatDuration, formatTime, replayButton, runPath } from './run-pages.ts';
import { sparkline } from './sparkline.ts';

/** A link to the run of attempt `a` (the job's), with the attempt's start, status and, after the first, its number. */
function attemptCell(job: string, a: RecentAttempt | undefined, zone: string | undefined): SafeHtml {
  if (!a) return html`<span class="muted">—</span>`;
  const nth = a.attempt > 1 ? html` <span class="muted">attempt ${a.attempt}</span>` : '';
  return html`<a href="${runPath(job, a.run_key)}">${formatTime(a.started_at, zone)}</a> <span class="s-${a.status}">${a.status}</span>${nth}`;
}

function failureNote(o: JobOverview): SafeHtml | '' {
  const wait = o.waitingForSlot;
  const slot = wait
    ? html`<div class="slot-wait">waiting for a slot on ${wait.connection}: ${wait.held} of ${wait.limit} busy${wait.waiting > 1 ? ` (${wait.waiting} runs waiting)` : ''}</div>`
    : '';
  return html`${slot}${runNote(o)}`;
}

function runNote(o: JobOverview): SafeHtml | '' {
  if (o.failure) {
    return html`<div class="failure"><span class="error-line">${o.failure.error_first_line ?? ''}</span>
${replayButton({ job: o.job, run_key: o.failure.run_key }, { className: 'replay' })}</div>`;
  }
  if (o.superseded) {
    const by = o.superseded.superseded_by_run_key!;
    return html`<div class="superseded">last failure <a href="${runPath(o.job, o.superseded.run_key)}">${formatTime(o.superseded.started_at, o.zone)}</a> superseded by the success of the later run <a href="${runPath(o.job, by)}">${by}</a></div>`;
  }
  return '';
}

function row(o: JobOverview): SafeHtml {
  const recent = o.health.recent;
  const failed = (a: RecentAttempt) => a.status !== 'succeeded';
  const rows = sparkline(
    recent.map((a) => ({ value: failed(a) ? null : a.rows, failed: failed(a) })),
    `rows of the last ${recent.length} attempts`,
    (v) => formatCount(v),
  );
  const durations = sparkline(
    recent.map((a) => ({ value: a.duration_ms, failed: failed(a) })),
    `duration of the last ${recent.length} attempts`,
    (v) => formatDuration(v),
  );
  const problems = o.problems.length
    ? html`<ul class="problems">${o.problems.map((p) => html`<li><code>${p}</code></li>`)}</ul>`
    : '';
  return html`<tr class="job state-${o.state}" data-job="${o.job}">
<td><a href="/admin/runs?job=${encodeURIComponent(o.job)}">${o.job}</a>${problems}</td>
<td><span class="state st-${o.state}">${STATE_LABELS[o.state]}</span>${o.freshness ? html`<div class="muted">freshness ${o.freshness}</div>` : ''}</td>
<td class="last-run">${attemptCell(o.job, o.health.last, o.zone)}${failureNote(o)}</td>
<td class="last-success">${o.health.lastSuccess ? html`<a href="${runPath(o.job, o.health.lastSuccess.run_key)}">${formatTime(o.health.lastSuccess.started_at, o.zone)}</a>` : html`<span class="muted">never</span>`}</td>
<td class="next-tick">${o.nextTick ? formatTime(o.nextTick, o.zone) : html`<span class="muted">${o.state === 'invalid' && o.schedule ? 'paused while invalid' : o.schedule ? '—' : 'manual only'}</span>`}${o.schedule ? html`<div class="muted">${o.schedule}</div>` : ''}</td>
<td class="spark-rows">${rows}</td><td class="spark-duration">${durations}</td></tr>
`;
}

/** The overview page. `invalidAlerts` lists alert targets left out as invalid (their problems). */
export function renderOverview(
  jobs: JobOverview[],
  now: Date,
  invalidAlerts: { name: string; problems: string[] }[] = [],
): string {
  const counts = new Map<string, number>();
  for (const j of jobs) counts.set(j.state, (counts.get(j.state) ?? 0) + 1);
  const summary = [...counts].map(
    ([s, n]) => html`<span class="state st-${s}">${n} ${STATE_LABELS[s as JobOverview['state']]}</span> `,
  );
  const alerts = invalidAlerts.length
    ? html`<div class="problem" role="alert">Alert targets not used because jobs.yaml is wrong about them:<ul>${invalidAlerts.map((a) => html`<li>${a.name}: ${a.problems.map((p) => html`<code>${p}</code> `)}</li>`)}</ul></div>`
    : '';
  const table = jobs.length
    ? html`<table class="overview">${headerRow(COLUMNS.overview)}<tbody>
${jobs.map(row)}</tbody></table>`
    : html`<p>No jobs in jobs.yaml.</p>`;
  return page(
    'Jobs',
    html`<p class="summary">${summary}<span class="muted">as of ${formatTime(now)}; times in each job's time zone, with its UTC offset</span></p>${alerts}${table}`,
  );
}
