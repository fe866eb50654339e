/**
 * Server-rendered HTML for the admin pages: escaping, the page frame and its inline stylesheet, the shapes the pages
 * share, and the replies that send a page or a line of text. No scripts; every value that reaches a page goes through
 * {@link escapeHtml} (the server's error text too: verbatim, never markup).
 */
import type { FastifyReply } from 'fastify';
import { commaCount } from '../history/attempt-progress.ts';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes `& < > " '` so any text is safe in element content and in quoted attribute values. */
export function escapeHtml(value: unknown): string {
  const text = value === null || value === undefined ? '' : String(value);
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** A tagged template that escapes every value but {@link SafeHtml} and arrays of it (joined without separator). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += toHtml(values[i]) + strings[i + 1]!;
  return new SafeHtml(out);
}

/** Markup that is already escaped; {@link html} inserts it unchanged. */
export class SafeHtml {
  readonly value: string;
  constructor(value: string) {
    this.value = value;
  }
  toString(): string {
    return this.value;
  }
}

function toHtml(v: unknown): string {
  if (v instanceof SafeHtml) return v.value;
  if (Array.isArray(v)) return v.map(toHtml).join('');
  return escapeHtml(v);
}

/**
 * A count with thousands separated by commas (`1,234,567`), as the CLI, the logs and recorded error messages write
 * it, so that one page never shows one figure two ways; empty when unknown.
 */
export function formatCount(n: string | number | null | undefined): string {
  if (n === null || n === undefined) return '';
  return commaCount(n);
}

/** The column names of the tables that become cards on a narrow screen: their headers and the cards' labels. */
export const COLUMNS = {
  overview: ['Job', 'State', 'Last attempt', 'Last success', 'Next tick', 'Rows', 'Duration'],
  runs: ['Run', 'Started', 'Status', 'Trigger', 'Attempts', 'Duration', 'Rows', 'Error'],
  attempts: ['Attempt', 'Attempt id', 'Started', 'Status', 'Trigger', 'Duration', 'Rows', 'Worker', 'Error'],
  connections: ['Connection', 'Service user', 'Server', 'Client-ID', 'Login', 'Token scopes'],
} as const;

/** A table, its `id` or `class` as given, with a header row of `columns` and `rows` (each `<tr>…</tr>`) as its body. */
export function table(attrs: { id: string } | { class: string }, columns: readonly string[], rows: unknown): SafeHtml {
  const attr = 'id' in attrs ? html`id="${attrs.id}"` : html`class="${attrs.class}"`;
  return html`<table ${attr}><thead><tr>${columns.map((c) => html`<th>${c}</th>`)}</tr></thead><tbody>
${rows}</tbody></table>`;
}

/** A notice above a page's content: good news (`notice`, a status) or a refusal (`problem`, an alert). */
export function banner(kind: 'notice' | 'problem', body: unknown, id?: string): SafeHtml {
  const role = kind === 'notice' ? 'status' : 'alert';
  return html`<div class="${kind}" role="${role}"${id ? html` id="${id}"` : ''}>${body}</div>`;
}

/**
 * CSS that shows each row of the table `t` as a card on a narrow screen: one cell per line under its column's name,
 * the first cell as the card's title; the first `bare` columns get no name (the title, a cell that names itself).
 */
function stackedTable(t: string, columns: readonly string[], bare = 1): string {
  return [
    `${t},${t} tbody,${t} tr,${t} td{display:block}${t} thead{display:none}${t}{background:none}`,
    `${t} tr{background:#fff;border:1px solid #d0d7de;margin-bottom:.8rem}`,
    `${t} td:empty{display:none}${t} td{border:0;border-top:1px solid #eaeef2;overflow-wrap:anywhere;text-align:left}`,
    `${t} td:first-child{border-top:0;font-weight:600}`,
    ...columns.map((l, i) =>
      i >= bare
        ? `${t} td:nth-child(${i + 1})::before{content:"${l}";display:block;font-weight:600;font-size:.85em;` +
          'color:#57606a}'
        : '',
    ),
  ].join('\n');
}

/**
 * CSS that keeps the words of the columns `whole` of the table `t` (job names, attempt ids, workers, times) whole on
 * a wide screen: every cell may break anywhere (a server's message can be one long word), which let a column of
 * messages squeeze the names beside it to a few characters a line. Their words now set the column's least width.
 */
function wholeWords<C extends readonly string[]>(t: string, columns: C, whole: readonly C[number][]): string {
  return whole.map((c) => `${t} td:nth-child(${columns.indexOf(c) + 1})`).join(',') + '{overflow-wrap:normal}';
}

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#1b1f24;background:#fafafa}
h1{font-size:1.3rem;margin:0 0 .8rem}h2{font-size:1.1rem;margin:1.2rem 0 .4rem}h1,h2,h3{overflow-wrap:anywhere}
nav{display:flex;flex-wrap:wrap;align-items:center;gap:.3rem 1rem}nav form.logout{margin-left:auto}
#logout{font-size:.9em;padding:.15rem .7rem}
form.login{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center}form.login input{font:inherit;padding:.3rem}
table{border-collapse:collapse;width:100%;background:#fff;margin-bottom:1rem}
th,td{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;vertical-align:top}th{background:#f0f3f6}
td{overflow-wrap:anywhere}td.num{text-align:right;font-variant-numeric:tabular-nums;overflow-wrap:normal}
pre{background:#fff;border:1px solid #d0d7de;padding:.6rem;white-space:pre-wrap;word-break:break-word;margin:.3rem 0}
.s-succeeded{color:#116329}.s-failed{color:#cf222e;font-weight:600}.s-interrupted{color:#9a6700}
.s-running{color:#0969da}
.notice{padding:.5rem .8rem;border:1px solid #2da44e;background:#dafbe1;margin-bottom:1rem}
.problem{padding:.5rem .8rem;border:1px solid #cf222e;background:#ffebe9;margin-bottom:1rem}
form.inline{display:inline}button{font:inherit;padding:.3rem .9rem;cursor:pointer}
button.primary{background:#1f883d;color:#fff;border:1px solid #1a7f37;border-radius:6px;font-weight:600;
padding:.45rem 1.2rem}
button.secondary{background:#f6f8fa;color:#1b1f24;border:1px solid #d0d7de;border-radius:6px;font-size:.9em;
padding:.2rem .7rem}
.failure-box{border:1px solid #cf222e;border-left-width:4px;background:#fff;padding:.2rem .8rem .5rem;
margin-bottom:1rem}
.failure-box h2{margin-top:.5rem}.hint{background:#fff8c5;border:1px solid #d4a72c;padding:.4rem .6rem}
.replay-advice{border:1px solid #d4a72c;background:#fff8c5;padding:.2rem .8rem .6rem;margin-bottom:1rem}
.muted{color:#57606a;font-size:.9em}.state{padding:.05rem .4rem;border-radius:.6rem;white-space:nowrap;font-weight:600}
.st-healthy{background:#dafbe1;color:#116329}.st-failing,.st-login_required{background:#ffebe9;color:#cf222e}
.st-stale{background:#fff8c5;color:#9a6700}.st-invalid{background:#fbefff;color:#8250df}
.st-never_run{background:#eaeef2;color:#57606a}
.failure{margin-top:.3rem}.error-line{color:#cf222e;margin-right:.5rem}
.superseded{margin-top:.3rem;color:#57606a;font-size:.9em}
ul.problems{margin:.3rem 0 0;padding-left:1.1rem;font-size:.9em}svg.spark{display:block}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dt{font-weight:600}
dd{margin:0;min-width:0;overflow-wrap:anywhere}
.timeline{margin:.4rem 0 1rem}.tl-legend{display:flex;flex-wrap:wrap;gap:.2rem 1rem;font-size:.85em;margin-bottom:.4rem}
.tl-legend-item{white-space:nowrap}.tl-legend-item.muted{white-space:normal}
.sw{display:inline-block;width:.8em;height:.8em;margin-right:.3em;vertical-align:-.05em;border-radius:2px}
.tl-grid-wrap{display:grid;grid-template-columns:150px minmax(0,1fr);background:#fff;border:1px solid #d0d7de;
padding:0 .5rem .3rem}
.tl-head{grid-column:1/-1;padding:.45rem 0 .25rem;border-top:1px solid #d0d7de}.tl-head:first-child{border-top:0}
.tl-spent{font-size:.9em;margin-top:.15rem}.tl-spent-item{margin-right:.9rem;white-space:nowrap;display:inline-block}
svg.tl-labels text{font-size:11px;fill:#1b1f24}svg.tl-labels text.tl-small{font-size:9px}.tl-detail{fill:#57606a}
.tl-failed-text{fill:#cf222e;font-weight:600}
svg.tl-bars,svg.tl-labels,svg.tl-axis{display:block;overflow:hidden}svg.tl-axis text{font-size:10px;fill:#57606a}
.tl-note{margin:.3rem 0}.tl-axis-label{font-size:10px;padding:2px 0 0 4px}
.tl-done{font-size:.9em;margin-top:.15rem}
.tl-server{fill:#e16f24;background:#e16f24}.tl-fetch{fill:#f6b88d;background:#f6b88d}
.tl-network{fill:#d4a72c;background:#d4a72c}
.tl-decode{fill:#8250df;background:#8250df}.tl-db{fill:#0969da;background:#0969da}
.tl-slot{fill:#afb8c1;background:#afb8c1}
.tl-span{fill:#ddf4ff;stroke:#54aeff;vector-effect:non-scaling-stroke}
.tl-unknown{fill:#eaeef2;stroke:#afb8c1;stroke-dasharray:4 3;vector-effect:non-scaling-stroke}
.tl-outline{fill:none}.tl-grid{stroke:#eaeef2;vector-effect:non-scaling-stroke}
rect.tl-failed,.tl-failed rect.tl-outline{stroke:#cf222e;stroke-width:2;vector-effect:non-scaling-stroke}
@media (min-width:1000px){
${wholeWords('table.overview', COLUMNS.overview, ['Job', 'Last success', 'Next tick'])}
table.overview ul.problems{overflow-wrap:anywhere}
${wholeWords('#attempts', COLUMNS.attempts, ['Attempt id', 'Started', 'Status', 'Trigger', 'Worker'])}
}
@media (max-width:700px){
body{margin:.8rem}dl{grid-template-columns:1fr}dt{margin-top:.3rem}#documents{display:block;overflow-x:auto}
${stackedTable('table.overview', COLUMNS.overview, 2)}
${stackedTable('table.runs', COLUMNS.runs)}
${stackedTable('#attempts', COLUMNS.attempts, 0)}
${stackedTable('table.connections', COLUMNS.connections)}
}
`;

const NAV = [
  ['/admin', 'Jobs'],
  ['/admin/runs', 'Runs'],
  ['/admin/connections', 'Connections'],
  ['/admin/queues', 'Queue'],
  ['/metrics', 'Metrics'],
];

/**
 * The Log out button of every page: a POST to `/admin/logout` (server.ts), which state-changing requests must send
 * from this origin (the Origin check, with the session cookie's SameSite=Strict), as every form of these pages does.
 */
const LOGOUT = html`<form class="inline logout" method="post" action="/admin/logout">\
<button type="submit" id="logout">Log out</button></form>`;

/**
 * A full HTML page around `body`, with navigation, a Log out button and the inline stylesheet.
 * @param opts.logout false for a page seen before logging in (the login form): no Log out button
 * @param opts.head more of the page's head (a refresh)
 */
export function page(title: string, body: SafeHtml, opts: { logout?: boolean; head?: SafeHtml } = {}): string {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8">${opts.head ?? ''}\
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>${title} · report-etl</title><style>${new SafeHtml(STYLE)}</style></head>
<body><nav>${NAV.map(([href, text]) => html`<a href="${href}">${text}</a>`)}${opts.logout === false ? '' : LOGOUT}\
</nav>
<h1>${title}</h1>
${body}
</body></html>`.value;
}

/** Content-Security-Policy of the pages: no scripts, inline styles only, forms post to this origin (not bull-board). */
const PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/**
 * Answers with `body`, a {@link page}, under the pages' Content-Security-Policy.
 * @param o.noStore `Cache-Control: no-store` (pages of a login); o.referrer the page's Referrer-Policy
 */
export function sendPage(
  reply: FastifyReply,
  body: string,
  o: { status?: number; noStore?: boolean; referrer?: string } = {},
): FastifyReply {
  reply.code(o.status ?? 200).header('content-security-policy', PAGE_CSP);
  if (o.noStore) reply.header('cache-control', 'no-store');
  if (o.referrer) reply.header('referrer-policy', o.referrer);
  return reply.type('text/html; charset=utf-8').send(body);
}

/** Answers `status` with `text` and a newline as plain text (refusals, a missing run or document). */
export function sendText(reply: FastifyReply, status: number, text: string): FastifyReply {
  return reply.code(status).type('text/plain; charset=utf-8').send(`${text}\n`);
}
