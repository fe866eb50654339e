/**
 * The admin home page for on-call staff: a line per jobs.yaml job with its state, last attempt, last success, next
 * tick and sparklines of its last attempts' rows and durations; a Replay button for a failing job's last failure, the
 * jobs.yaml problems of an invalid job.
 */
import type { RecentAttempt } from '../history/job-health.ts';
import { banner, COLUMNS, formatCount, html, page, table, type SafeHtml } from './html.ts';
import { STATE_LABELS, type JobOverview } from './job-overview.ts';
import { formatTime } from '../time-text.ts';
import { formatDuration, jobRunsLink, replayButton, runPath } from './run-pages.ts';
import { sparkline } from './sparkline.ts';

const muted = (text: unknown) => html`<span class="muted">${text}</span>`;

/** A link to `a`'s start on its run's page, at `zone`. */
const runLink = (job: string, a: RecentAttempt, zone: string | undefined) =>
  html`<a href="${runPath(job, a.run_key)}">${formatTime(a.started_at, zone)}</a>`;

/** The last attempt: its start, status and, after the first, its number. */
function attemptCell(job: string, a: RecentAttempt | undefined, zone: string | undefined): SafeHtml {
  if (!a) return muted('—');
  const nth = a.attempt > 1 ? html` <span class="muted">attempt ${a.attempt}</span>` : '';
  return html`${runLink(job, a, zone)} <span class="s-${a.status}">${a.status}</span>${nth}`;
}

function slotNote(o: JobOverview): SafeHtml | '' {
  const w = o.waitingForSlot;
  if (!w) return '';
  const more = w.waiting > 1 ? ` (${w.waiting} runs waiting)` : '';
  return html`<div class="slot-wait">waiting for a slot on ${w.connection}: ${w.held} of ${w.limit} busy${more}</div>`;
}

function runNote(o: JobOverview): SafeHtml | '' {
  if (o.failure) {
    return html`<div class="failure"><span class="error-line">${o.failure.error_first_line ?? ''}</span>
${replayButton({ job: o.job, run_key: o.failure.run_key }, { className: 'replay' })}</div>`;
  }
  if (!o.superseded) return '';
  const by = o.superseded.superseded_by_run_key!;
  return html`<div class="superseded">last failure ${runLink(o.job, o.superseded, o.zone)} superseded by the \
success of the later run <a href="${runPath(o.job, by)}">${by}</a></div>`;
}

function nextTickCell(o: JobOverview): SafeHtml {
  const none = o.state === 'invalid' && o.schedule ? 'paused while invalid' : o.schedule ? '—' : 'manual only';
  const schedule = o.schedule ? html`<div class="muted">${o.schedule}</div>` : '';
  return html`${o.nextTick ? formatTime(o.nextTick, o.zone) : muted(none)}${schedule}`;
}

function row(o: JobOverview): SafeHtml {
  const recent = o.health.recent;
  const failed = (a: RecentAttempt) => a.status !== 'succeeded';
  const rows = sparkline(
    recent.map((a) => ({ value: failed(a) ? null : a.rows, failed: failed(a) })),
    `rows of the last ${recent.length} attempts`,
    formatCount,
  );
  const durations = sparkline(
    recent.map((a) => ({ value: a.duration_ms, failed: failed(a) })),
    `duration of the last ${recent.length} attempts`,
    formatDuration,
  );
  const problems = o.problems.length
    ? html`<ul class="problems">${o.problems.map((p) => html`<li><code>${p}</code></li>`)}</ul>`
    : '';
  const freshness = o.freshness ? html`<div class="muted">freshness ${o.freshness}</div>` : '';
  const success = o.health.lastSuccess;
  return html`<tr class="job state-${o.state}" data-job="${o.job}">
<td>${jobRunsLink(o.job)}${problems}</td>
<td><span class="state st-${o.state}">${STATE_LABELS[o.state]}</span>${freshness}</td>
<td class="last-run">${attemptCell(o.job, o.health.last, o.zone)}${slotNote(o)}${runNote(o)}</td>
<td class="last-success">${success ? runLink(o.job, success, o.zone) : muted('never')}</td>
<td class="next-tick">${nextTickCell(o)}</td>
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
  const alertItems = invalidAlerts.map(
    (a) => html`<li>${a.name}: ${a.problems.map((p) => html`<code>${p}</code> `)}</li>`,
  );
  const alerts = invalidAlerts.length
    ? banner('problem', html`Alert targets not used because jobs.yaml is wrong about them:<ul>${alertItems}</ul>`)
    : '';
  const jobTable = jobs.length
    ? table({ class: 'overview' }, COLUMNS.overview, jobs.map(row))
    : html`<p>No jobs in jobs.yaml.</p>`;
  const asOf = html`<span class="muted">as of ${formatTime(now)}; times in each job's time zone, with its UTC \
offset</span>`;
  return page('Jobs', html`<p class="summary">${summary}${asOf}</p>${alerts}${jobTable}`);
}
