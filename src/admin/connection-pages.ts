/**
 * The connections page: each jobs.yaml connection's kind of service user and, for a user-dependent one, its login
 * (since when, scopes granted, refresh token age and latest expiry; LOGIN_REQUIRED and why) with a "Log in" button
 * (a POST to /admin/connections/:name/login). No secret reaches it: the rows carry none.
 */
import type { ConnectionConfig } from '../config/schema.ts';
import type { ConnectionLoginRow } from '../history/logins.ts';
import { expectedRefreshValidityMs } from '../login/login-flow.ts';
import { banner, COLUMNS, html, page, table, type SafeHtml } from './html.ts';
import { formatTime } from '../time-text.ts';

/** One connection as the page shows it. */
export interface ConnectionView {
  name: string;
  /** From jobs.yaml, when the admin server has it. */
  config: ConnectionConfig | undefined;
  /** The recorded login and scope of this name, server and Client-ID, if any. */
  row: ConnectionLoginRow | undefined;
}

/** An age as `3 d 4 h`, `5 h 02 min` or `12 min`. */
function formatAge(ms: number): string {
  const min = Math.max(0, Math.floor(ms / 60_000));
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 48) return `${h} h ${String(min % 60).padStart(2, '0')} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

const state = (cls: string, text: string) => html`<span class="login-state${cls}">${text}</span>`;

function loginCell(v: ConnectionView, now: number): SafeHtml {
  const auth = v.config?.auth ?? v.row?.auth;
  if (auth !== 'authorization_code') return state('', 'client credentials (no login)');
  const link = v.config
    ? html` <form class="inline" method="post" action="/admin/connections/${encodeURIComponent(v.name)}/login">\
<button type="submit" class="login-link">Log in</button></form>`
    : '';
  const r = v.row;
  if (r?.login_required_at) {
    const since = html` since ${formatTime(r.login_required_at)}: ${r.login_required_reason ?? ''}`;
    return html`${state(' s-failed', 'LOGIN_REQUIRED')}${since}${link}`;
  }
  if (!r?.logged_in || !r.logged_in_at) return html`${state(' s-interrupted', 'not logged in')}${link}`;
  const age = formatAge(now - r.logged_in_at.getTime());
  const expires = new Date(r.logged_in_at.getTime() + expectedRefreshValidityMs(r.granted_scope));
  return html`${state(' s-succeeded', 'logged in')} since ${formatTime(r.logged_in_at)}; refresh token ${age} old, \
expires by ${formatTime(expires)} at the latest${link}`;
}

/**
 * The page. `notice` names a connection that just logged in (after the callback).
 * @param now epoch ms, for ages
 */
export function renderConnections(
  views: ConnectionView[],
  notice: { loggedIn?: string | undefined } = {},
  now = Date.now(),
): string {
  const done = notice.loggedIn ? banner('notice', html`Connection <b>${notice.loggedIn}</b> is logged in.`) : '';
  const rows = views.map((v) => {
    const cells = [
      v.config?.auth ?? v.row?.auth,
      v.config?.baseUrl ?? v.row?.base_url,
      v.config?.clientId ?? v.row?.client_id,
    ];
    return html`<tr data-connection="${v.name}"><td>${v.name}</td>${cells.map((c) => html`<td>${c ?? ''}</td>`)}
<td>${loginCell(v, now)}</td><td class="scopes">${v.row?.granted_scope ?? ''}</td></tr>
`;
  });
  const empty = views.length === 0 ? html`<p>No connections.</p>` : '';
  return page('Connections', html`${done}${empty}${table({ class: 'connections' }, COLUMNS.connections, rows)}`);
}

/** The page the callback shows: a finished login started by `report-etl login`, or a failed one. */
export function renderCallbackResult(ok: boolean, text: string): string {
  return page(ok ? 'Logged in' : 'Login failed', banner(ok ? 'notice' : 'problem', text, 'login-result'));
}

/**
 * The page a "Log in" POST answers with: it sends the browser on to the server's login page at once (a meta refresh,
 * and a link). Not a redirect of the POST: the pages' CSP lets forms post to this origin only (`form-action 'self'`),
 * which browsers apply to the redirects of a form's submission too.
 */
export function renderLoginRedirect(connection: string, authUrl: string): string {
  const body = html`<p>Connection ${connection}: <a id="continue" href="${authUrl}">continue to the server's login \
page</a>.</p>`;
  return page('Log in', body, { head: html`<meta http-equiv="refresh" content="0;url=${authUrl}">` });
}
