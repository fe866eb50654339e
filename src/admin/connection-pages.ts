/**
 * The connections page: for each jobs.yaml connection its kind of service user, and for a user-dependent
 * one its login state (logged in since, scopes granted, refresh token age and expected expiry: 60 days with offline
 * access, 10 hours without, docs/report-export-service.md "Limits"), LOGIN_REQUIRED with its reason, and a "Log in" link that starts the login
 * (a POST to /admin/connections/:name/login). The token response's scope is shown for both kinds. Pure rendering; no
 * secret ever reaches it (the rows carry none).
 */
import type { ConnectionConfig } from '../config/schema.ts';
import type { ConnectionLoginRow } from '../history/logins.ts';
import { expectedRefreshValidityMs } from '../login/login-flow.ts';
import { html, page, type SafeHtml } from './html.ts';
import { formatTime } from './run-pages.ts';

/** One connection as the page shows it. */
export interface ConnectionView {
  name: string;
  /** From jobs.yaml, when the admin server has it. */
  config: ConnectionConfig | undefined;
  /** The recorded login and scope of this name, server and Client-ID, if any. */
  row: ConnectionLoginRow | undefined;
}

/** An age as `3 d 4 h`, `5 h 02 min` or `12 min`. */
export function formatAge(ms: number): string {
  const min = Math.max(0, Math.floor(ms / 60_000));
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 48) return `${h} h ${String(min % 60).padStart(2, '0')} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

function loginCell(v: ConnectionView, now: number): SafeHtml {
  const auth = v.config?.auth ?? v.row?.auth;
  if (auth !== 'authorization_code') return html`<span class="login-state">client credentials (no login)</span>`;
  const link = v.config
    ? html` <form class="inline" method="post" action="/admin/connections/${encodeURIComponent(v.name)}/login"><button type="submit" class="login-link">Log in</button></form>`
    : '';
  const r = v.row;
  if (r?.login_required_at) {
    return html`<span class="login-state s-failed">LOGIN_REQUIRED</span> since ${formatTime(r.login_required_at)}: ${r.login_required_reason ?? ''}${link}`;
  }
  if (!r?.logged_in || !r.logged_in_at)
    return html`<span class="login-state s-interrupted">not logged in</span>${link}`;
  const age = now - r.logged_in_at.getTime();
  const expires = new Date(r.logged_in_at.getTime() + expectedRefreshValidityMs(r.granted_scope));
  return html`<span class="login-state s-succeeded">logged in</span> since ${formatTime(r.logged_in_at)}; refresh token ${formatAge(age)} old, expires by ${formatTime(expires)} at the latest${link}`;
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
  const banner = notice.loggedIn
    ? html`<div class="notice" role="status">Connection <b>${notice.loggedIn}</b> is logged in.</div>`
    : '';
  const rows = views.map(
    (
      v,
    ) => html`<tr data-connection="${v.name}"><td>${v.name}</td><td>${v.config?.auth ?? v.row?.auth ?? ''}</td><td>${v.config?.baseUrl ?? v.row?.base_url ?? ''}</td><td>${v.config?.clientId ?? v.row?.client_id ?? ''}</td>
<td>${loginCell(v, now)}</td><td class="scopes">${v.row?.granted_scope ?? ''}</td></tr>
`,
  );
  const empty = views.length === 0 ? html`<p>No connections.</p>` : '';
  return page(
    'Connections',
    html`${banner}${empty}<table><thead><tr><th>Connection</th><th>Service user</th><th>Server</th><th>Client-ID</th><th>Login</th><th>Token scopes</th></tr></thead><tbody>${rows}</tbody></table>`,
  );
}

/** The page the callback shows: a finished login started by `report-etl login`, or a failed one. */
export function renderCallbackResult(ok: boolean, text: string): string {
  return page(
    ok ? 'Logged in' : 'Login failed',
    html`<div class="${ok ? 'notice' : 'problem'}" role="${ok ? 'status' : 'alert'}" id="login-result">${text}</div>`,
  );
}

/**
 * The page a "Log in" POST answers with: it sends the browser on to the server's login page (`authUrl`) at once
 * (a meta refresh, with a link for a browser that does not follow it). Not a redirect of the POST: the pages'
 * Content-Security-Policy lets forms post to this origin only (`form-action 'self'`), which browsers apply to the
 * redirects of a form's submission too.
 */
export function renderLoginRedirect(connection: string, authUrl: string): string {
  const body = html`<p>Connection ${connection}: <a id="continue" href="${authUrl}">continue to the server's login page</a>.</p>`;
  return page('Log in', body).replace(
    '<meta charset="utf-8">',
    html`<meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${authUrl}">`.value,
  );
}
