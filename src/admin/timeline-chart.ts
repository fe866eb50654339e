/**
 * Where a run's time went (docs/architecture.md "Observability"), drawn on the server as inline SVG: each attempt's
 * timeline (history/timeline.ts) on its own time axis (from its start to its end, so that a short attempt minutes
 * after another is as legible as the other), coloured by whom the attempt waited for, with a line per attempt saying
 * how much each took, or for an attempt without a timeline what it had done; details in tooltips (SVG `<title>`).
 * A grid of a label column of fixed width and a bar column whose viewBox stretches to its width (rows keep their
 * pixel height): it fills a wide screen, fits a phone.
 */
import {
  readTimeline,
  timeSpent,
  type AttemptTimeline,
  type TimelinePage,
  type TimelineStep,
  type TimelineStepName,
} from '../history/timeline.ts';
import { readingWords, stoppedAtWords, type AttemptProgress } from '../history/attempt-progress.ts';
import { formatCount, html, type SafeHtml } from './html.ts';

/** One attempt to draw. */
export interface ChartAttempt {
  /** The heading of its section (attempt number, status, start), markup made by the caller. */
  heading: SafeHtml;
  status: string;
  startedAt: Date;
  finishedAt: Date | null;
  /** `etl.attempts.timeline` as read (checked here with readTimeline). */
  timeline: unknown;
  /**
   * What the attempt recorded of its work (`etl.attempts.pages`, `rows`: null when its process ended before it could
   * say) and whether it had started its report job: said for an attempt without a timeline.
   */
  done?: {
    pages: number | null;
    rows: string | number | null;
    reportJobStarted: boolean;
    /** How far its reading got (`etl.attempts.progress`), recorded as it loaded: said when `pages` is null. */
    progress?: AttemptProgress | undefined;
  };
}

/** Width of the bar column's viewBox: x is in thousandths of the attempt's time axis. */
const W = 1000;
const LABEL_W = 150;
const STEP_H = 16;

/** Who an attempt waited for in a step: the class that colours it. */
type Actor = 'slot' | 'server' | 'network' | 'decode' | 'db' | 'span';

/** Each step's label, actor and tooltip. */
const STEP_INFO: Record<TimelineStepName, [label: string, actor: Actor, what: string]> = {
  slot: ['slot wait', 'slot', 'waiting for a report slot on the connection (maxConcurrentReports)'],
  record: ['record', 'db', 'recording the attempt (PostgreSQL)'],
  check: ['check', 'db', 'checking the attempt may run (PostgreSQL)'],
  token: [
    'token',
    'server',
    'the report client: discovery and access token (the server, or the token shared in Redis)',
  ],
  clear: ['clear dead', 'server', "deleting dead attempts' report jobs (the server)"],
  start: ['start', 'server', 'the start request (the server)'],
  render: ['render', 'server', 'the server renders the report (status polls)'],
  load: ['load', 'span', 'the load transaction (PostgreSQL); the pages are read inside it'],
  target_delete: [
    'DELETE rows',
    'db',
    "DELETE of the target's old rows (PostgreSQL; readers keep them until the commit)",
  ],
  copy: [
    'COPY',
    'span',
    "COPY FROM STDIN open: every page's rows stream through it; PostgreSQL's own share is the blue part of each page",
  ],
  apply: ['apply', 'db', 'applying the write mode from the staging table (PostgreSQL)'],
  commit: ['commit', 'db', "the attempt's records and COMMIT (PostgreSQL)"],
  delete: ['DELETE job', 'server', 'DELETE of the report job (the server)'],
};

/** The legend's entries: class, name, what it means. */
const LEGEND: [Actor | 'fetch', string, string][] = [
  ['server', 'server', 'waiting for its answers: token, start, rendering, DELETE'],
  ['fetch', 'page answer', 'a page requested until its answer (fetched one page ahead)'],
  ['network', 'network', "waiting for a page's bytes"],
  ['decode', 'decoding', 'this worker decoding a page'],
  ['db', 'database', 'PostgreSQL: records, DELETE, COPY taking rows, commit'],
  ['slot', 'slot wait', 'in line for a report slot'],
];

/** A duration for labels: `0.4 ms`, `85 ms`, `1.2 s`, `4 min 05 s`, `2 h 03 min`. */
function formatSpan(ms: number): string {
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** A tick's label: round values read short (`500 ms`, `1.5 s`, `2 min`, `1.5 h`). */
export function formatTick(ms: number): string {
  if (ms === 0) return '0';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${+(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${+(ms / 60_000).toFixed(1)} min`;
  if (ms < 86_400_000) return `${+(ms / 3_600_000).toFixed(1)} h`;
  return `${+(ms / 86_400_000).toFixed(1)} d`;
}

/** Ticks of an axis of `len` ms: a round step (1, 2, 5 × 10^k ms) giving at most about 6 intervals. */
export function axisTicks(len: number): number[] {
  if (!(len > 0)) return [0];
  const steps = [
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000,
    900_000, 1_800_000, 3_600_000, 7_200_000, 10_800_000, 21_600_000, 43_200_000, 86_400_000,
  ];
  const step = steps.find((s) => len / s <= 6) ?? Math.ceil(len / 6 / 86_400_000) * 86_400_000;
  const ticks: number[] = [];
  for (let t = 0; t <= len + 1e-9; t += step) ticks.push(t);
  return ticks;
}

/** One row of an attempt's section: its label, its grey detail (a duration), its height and its bars at `y`. */
interface Row {
  label: string;
  detail: string;
  h: number;
  bars: (y: number) => SafeHtml;
  failed?: boolean;
}

/** Maps a time of one attempt (ms after its start), or a duration, onto the chart's x axis. */
type Scale = (ms: number) => number;

function rect(cls: string, x: number, y: number, w: number, h: number, title?: string): SafeHtml {
  const tip = title ? html`<title>${title}</title>` : '';
  return html`<rect class="${cls}" x="${x.toFixed(2)}" y="${y}" width="${Math.max(w, 1.2).toFixed(2)}" \
height="${h}">${tip}</rect>`;
}

const at = (ms: number) => `+${formatSpan(ms)}`;
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

function stepRow(s: TimelineStep, x: Scale): Row {
  const [label, actor, what] = STEP_INFO[s.step];
  const extra = [
    s.polls !== undefined ? `${plural(s.polls, 'status poll')}` : '',
    s.serverMs !== undefined ? `the server says it rendered for ${formatSpan(s.serverMs)}` : '',
    s.failed ? 'the attempt failed here' : '',
  ].filter(Boolean);
  const title =
    `${label}: ${formatSpan(s.ms)}, ${at(s.at)} to ${at(s.at + s.ms)}. ${what}` +
    `${extra.length ? `; ${extra.join('; ')}` : ''}.`;
  const cls = `tl-${actor}${s.failed ? ' tl-failed' : ''}`;
  return {
    label: s.step === 'render' && s.polls !== undefined ? `render (${plural(s.polls, 'poll')})` : label,
    detail: formatSpan(s.ms),
    h: STEP_H,
    failed: s.failed === true,
    bars: (y) => rect(cls, x(s.at), y + 2, x(s.ms), STEP_H - 4, title),
  };
}

function pageRow(p: TimelinePage, scale: Scale, h: number, showLabel: boolean): Row {
  const read = Math.max(0, p.end - p.start);
  const name =
    (p.to !== undefined ? `pages ${p.page}–${p.to}` : `page ${p.page}`) + (p.pass ? ` (pass ${p.pass})` : '');
  const waited = p.wait >= 0.5 ? ` (the attempt waited ${formatSpan(p.wait)} for it)` : '';
  const title =
    `${name}: ${formatCount(p.rows)} rows, ${formatBytes(p.bytes)}. ` +
    `Requested ${at(p.req)}, answered after ${formatSpan(Math.max(0, p.hdr - p.req))}${waited}; ` +
    `read ${at(p.start)} for ${formatSpan(read)}: ${formatSpan(p.net)} waiting for the server's bytes, ` +
    `${formatSpan(p.decode)} decoding, ${formatSpan(p.copy)} waiting for COPY (PostgreSQL)` +
    `${p.failed ? '; the attempt failed here' : ''}.`;
  return {
    label: showLabel ? (p.to !== undefined ? `p${p.page}–${p.to}` : `p${p.page}`) : '',
    detail: showLabel ? formatSpan(read) : '',
    h,
    failed: p.failed === true,
    bars: (y) => {
      // The fetch: a thin bar from the request to the answer; the reading: its time split by whom it waited for.
      const x0 = scale(p.start);
      const full = scale(p.end - p.start);
      const total = p.net + p.decode + p.copy || 1;
      let x = x0;
      const segment = (cls: string, ms: number) => {
        const w = (full * ms) / total;
        const bar = html`<rect class="${cls}" x="${x.toFixed(2)}" y="${y + 1}" width="${w.toFixed(2)}" \
height="${h - 2}"/>`;
        x += w;
        return w > 0 ? bar : '';
      };
      const segments = [segment('tl-network', p.net), segment('tl-decode', p.decode), segment('tl-db', p.copy)];
      const fetch = rect('tl-fetch', scale(p.req), y + h / 2 - 1, scale(p.hdr - p.req), 2);
      return html`<g class="tl-page${p.failed ? ' tl-failed' : ''}"><title>${title}</title>${fetch}${segments}\
${rect('tl-outline', x0, y + 1, full, h - 2)}</g>`;
    },
  };
}

/** The rows of one attempt's timeline: its steps in order, the pages after the load's first steps. */
function attemptRows(t: AttemptTimeline, x: Scale): Row[] {
  const h = t.pages.length > 40 ? 8 : 12;
  // With small rows, one label in five (and the last) keeps them legible; every page keeps its tooltip.
  const labelEvery = h < 12 ? 5 : 1;
  const pages = t.pages.map((p, i) => pageRow(p, x, h, i % labelEvery === 0 || i === t.pages.length - 1));
  // Pages go after the load's own first steps (DELETE rows, COPY) and before its last (apply, commit).
  const last = t.steps.findIndex((s) => s.step === 'apply' || s.step === 'commit' || s.step === 'delete');
  const steps = t.steps.map((s) => stepRow(s, x));
  return last < 0 ? [...steps, ...pages] : [...steps.slice(0, last), ...pages, ...steps.slice(last)];
}

/** A line of how much of the attempt's time went where, coloured as the bars are. */
function spentLine(t: AttemptTimeline): SafeHtml {
  const spent = timeSpent(t);
  const parts: [Actor, string, number][] = [
    ['server', 'server', spent.server],
    ['network', 'network', spent.network],
    ['db', 'database', spent.database],
    ['decode', 'decoding', spent.decode],
    ['slot', 'slot wait', spent.slot],
  ];
  const biggest = Math.max(...parts.map((p) => p[2]));
  const items = parts
    .filter(([, , ms]) => ms >= 0.05)
    .map(([cls, name, ms]) => {
      const pct = spent.total > 0 ? Math.round((ms / spent.total) * 100) : 0;
      const text = html`<span class="sw tl-${cls}"></span>${name} ${formatSpan(ms)} <span class="muted">(${pct} %)\
</span>`;
      return html`<span class="tl-spent-item">${ms === biggest ? html`<strong>${text}</strong>` : text}</span>`;
    });
  const other = spent.other >= 1 ? html`<span class="tl-spent-item muted">other ${formatSpan(spent.other)}</span>` : '';
  return html`<div class="tl-spent">From its slot wait to its DELETE, ${formatSpan(spent.total)}: ${items}${other}\
</div>`;
}

/**
 * What an attempt without a timeline had done and where it stopped: its recorded pages and rows, whether it had
 * started its report job, and when it was recorded ended (for a killed attempt, when the janitor closed it).
 */
function stoppedLine(a: ChartAttempt, ms: number): SafeHtml {
  const d = a.done;
  // A failed attempt's rows are those it committed: none, its load being rolled back; 0 says nothing of its reading.
  const rows = d && Number(d.rows ?? 0) > 0 ? `, ${formatCount(d.rows)} rows` : '';
  const figures =
    d && d.pages !== null
      ? `${formatCount(d.pages)} ${d.pages === 1 ? 'page' : 'pages'} read${rows}`
      : d?.progress
        ? `${stoppedAtWords(d.progress, formatCount)} (as last recorded, ${sinceStart(a, d.progress)})`
        : 'no pages or rows recorded (its process ended before it could record them)';
  // Recorded progress says it was loading already: the report job's start goes without saying.
  const where =
    !d || (d.pages === null && d.progress)
      ? ''
      : d.reportJobStarted
        ? '; it stopped after starting its report job (rendering or loading)'
        : '; it stopped before starting a report job';
  const loaded = a.status === 'succeeded' ? '' : '; nothing committed';
  return html`<div class="tl-done"><strong>Done before it stopped:</strong> ${figures}${loaded}${where}; recorded \
ended ${formatSpan(ms)} after its start.</div>`;
}

/** When progress `p` was recorded, as `12.3 s after its start`. */
function sinceStart(a: ChartAttempt, p: AttemptProgress): string {
  return `${formatSpan(Math.max(0, Date.parse(p.at) - a.startedAt.getTime()))} after its start`;
}

/**
 * How far a running attempt got, as last recorded (etl.attempts.progress): its reading, or at page 0 the server's
 * rendering and its polls; nothing before its first poll.
 */
function runningLine(a: ChartAttempt): SafeHtml {
  const p = a.done?.progress;
  if (!p) return html``;
  if (p.page === 0)
    return html`<div class="tl-done"><strong>So far:</strong> ${readingWords(p, formatCount)} (as last recorded, \
${sinceStart(a, p)}); nothing committed yet.</div>`;
  const reading = p.pagesRead >= p.page ? `page ${formatCount(p.page)}` : `reading page ${formatCount(p.page)}`;
  const of = p.pages === null ? '?' : formatCount(p.pages);
  return html`<div class="tl-done"><strong>So far:</strong> ${reading} of ${of}, ${formatCount(p.rows)} rows read \
(as last recorded, ${sinceStart(a, p)}); nothing committed yet.</div>`;
}

function labels(rows: Row[], height: number): SafeHtml {
  let y = 0;
  const texts = rows.map((r) => {
    const baseline = y + r.h / 2 + 4;
    y += r.h;
    if (!r.label) return '';
    const cls = `${r.h < STEP_H ? 'tl-small' : ''}${r.failed ? ' tl-failed-text' : ''}`;
    return html`<text x="4" y="${baseline}" class="${cls}">${r.label}<tspan class="tl-detail" dx="6">${r.detail}\
</tspan></text>`;
  });
  return html`<svg class="tl-labels" width="${LABEL_W}" height="${height}" role="presentation">${texts}</svg>`;
}

function bars(rows: Row[], height: number, grid: number[], label: string): SafeHtml {
  let y = 0;
  const drawn = rows.map((r) => {
    const b = r.bars(y);
    y += r.h;
    return b;
  });
  const lines = grid.map(
    (x) => html`<line class="tl-grid" x1="${x.toFixed(2)}" x2="${x.toFixed(2)}" y1="0" y2="${height}"/>`,
  );
  return html`<svg class="tl-bars" viewBox="0 0 ${W} ${height}" preserveAspectRatio="none" width="100%" \
height="${height}" role="img" aria-label="${label}">${lines}${drawn}</svg>`;
}

/** The axis row under an attempt's rows: its length in the label column, its ticks over the bars. */
function axisRow(len: number, ticks: number[]): SafeHtml {
  const axisLabels = ticks.map((t, i) => {
    const anchor = i === 0 ? 'start' : i === ticks.length - 1 && (t / len) * 100 > 90 ? 'end' : 'middle';
    return html`<text x="${((t / len) * 100).toFixed(2)}%" y="12" text-anchor="${anchor}">${formatTick(t)}</text>`;
  });
  return html`<div class="tl-axis-label muted">from its start</div><svg class="tl-axis" width="100%" height="16" \
role="presentation">${axisLabels}</svg>`;
}

/**
 * The timeline chart of `attempts` (oldest first), with a legend; a section per attempt with its heading, where its
 * time went (or, without a timeline, what it had done), its rows, and its own time axis from its start to its end
 * (`o.now`, default now, for one still running).
 */
export function timelineChart(attempts: ChartAttempt[], o: { now?: Date } = {}): SafeHtml {
  if (attempts.length === 0) return html``;
  const now = (o.now ?? new Date()).getTime();
  const notes: string[] = [];
  const sections = attempts.map((a) => {
    const t = readTimeline(a.timeline);
    const start = t ? Date.parse(t.start) : a.startedAt.getTime();
    const end = t ? start + t.ms : (a.finishedAt?.getTime() ?? now);
    const len = Math.max(1, end - start);
    const ticks = axisTicks(len);
    const x: Scale = (ms) => (ms / len) * W;
    let rows: Row[];
    let line: SafeHtml;
    if (t) {
      rows = attemptRows(t, x);
      line = spentLine(t);
      if (t.pageGroup) {
        notes.push(
          `${formatCount(t.pagesRead)} pages were read: drawn as ${t.pages.length} rows of up to ` +
            `${t.pageGroup} consecutive pages each (their times and counts summed), which keeps a timeline small.`,
        );
      }
    } else {
      const running = a.status === 'running';
      const why = running
        ? 'running: its timeline is written when it ends'
        : 'no timeline recorded (an attempt from before migration 0011, or one the janitor closed)';
      const ms = end - start;
      line = running ? runningLine(a) : stoppedLine(a, ms);
      const bar = (y: number) => rect('tl-unknown', 0, y + 2, x(ms), STEP_H - 4, `${why}; ${formatSpan(ms)}`);
      rows = [{ label: running ? 'running…' : 'no timeline', detail: formatSpan(ms), h: STEP_H, bars: bar }];
    }
    const height = rows.reduce((n, row) => n + row.h, 0);
    const label = `timeline of the attempt: ${rows.length} rows`;
    return html`<div class="tl-head">${a.heading}${line}</div>${labels(rows, height)}\
${bars(rows, height, ticks.map(x), label)}${axisRow(len, ticks)}`;
  });
  const legend = LEGEND.map(
    ([cls, name, what]) =>
      html`<span class="tl-legend-item" title="${what}"><span class="sw tl-${cls}"></span>${name}</span>`,
  );
  return html`<div class="timeline">
<div class="tl-legend">${legend}<span class="tl-legend-item muted">each attempt on its own time axis, from its \
start; hover a bar for its times; a page's bar is split into network, decoding and database as its reading waited \
for them</span></div>
<div class="tl-grid-wrap">${sections}</div>
${notes.map((n) => html`<p class="muted tl-note">${n}</p>`)}
</div>`;
}
