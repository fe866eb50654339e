/**
 * The admin login form (`GET /admin/login`, server.ts): the token is typed into a password field and POSTed, so it
 * never stands in a URL, the browser's history or a proxy's log. The page says why a login was refused: no token
 * given, a wrong one, or no token configured on this server.
 */
import { banner, html, page } from './html.ts';

/** What the login page says above its form. */
export type LoginNotice =
  /** `POST /admin/login` without a token. */
  | 'missing'
  /** A token that is not ADMIN_TOKEN. */
  | 'wrong'
  /** ADMIN_TOKEN is not set: this server takes no token. */
  | 'not-configured'
  /** `GET /admin/login?token=…`: the old login link, no longer taken. */
  | 'token-in-url'
  /** After `POST /admin/logout`. */
  | 'logged-out'
  /** An admin page asked for credentials. */
  | 'required';

const NOTICES: Record<LoginNotice, { kind: 'problem' | 'notice'; text: string }> = {
  missing: { kind: 'problem', text: 'No token was given: enter the admin token (ADMIN_TOKEN of the admin server).' },
  wrong: { kind: 'problem', text: 'Wrong token: it is not the admin token (ADMIN_TOKEN) of this server.' },
  'not-configured': {
    kind: 'problem',
    text:
      'This admin server takes no token: ADMIN_TOKEN is not set. Log in with its basic auth (ADMIN_USER) if set, ' +
      'else open it from the machine itself (http://127.0.0.1 or http://localhost).',
  },
  'token-in-url': {
    kind: 'problem',
    text:
      'Not logged in: a token in a link would stay in the browser history and in proxy logs, so it is no longer ' +
      'taken from the URL. Enter it here instead.',
  },
  'logged-out': { kind: 'notice', text: 'Logged out: this session ends on every admin server sharing its Redis.' },
  required: { kind: 'problem', text: 'Log in to see the admin pages.' },
};

/** The login page with its form, and `notice` above it when given. */
export function renderLoginPage(notice?: LoginNotice): string {
  const n = notice ? NOTICES[notice] : undefined;
  const shown = n ? banner(n.kind, n.text, 'login-notice') : '';
  const form = html`<form method="post" action="/admin/login" id="login" class="login">\
<label for="token">Admin token</label><input id="token" name="token" type="password" autocomplete="current-password" \
required autofocus><button type="submit" class="primary">Log in</button></form>
<p class="muted">The token is ADMIN_TOKEN of the admin server. Scripts send it as <code>Authorization: Bearer \
&lt;token&gt;</code> instead. A session lasts 12 hours; Log out ends it at once.</p>`;
  return page('Log in to report-etl', html`${shown}${form}`, { logout: false });
}
