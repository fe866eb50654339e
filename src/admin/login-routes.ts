/**
 * Routes of the user-dependent service users' logins:
 * - `GET /admin/connections` (admin auth): each connection's login state (connection-pages.ts);
 * - `POST /admin/connections/:name/login` (admin auth, same origin): starts a login and sends the browser on to the
 *   authorization URL (a page that refreshes to it: connection-pages.ts renderLoginRedirect); a GET answers 405;
 * - `GET /oauth/callback?code=…&session_state=…&state=…` (no admin auth: the ERP server's redirect lands here):
 *   accepts only a state that a pending login created, once, within 10 minutes (RFC 6749 section 10.12), exchanges
 *   the code and stores the refresh token (src/login/login-flow.ts). A login started on the admin page ends on the
 *   connections page; one started by `report-etl login` on a short page (the terminal shows the rest).
 * Query strings are never logged (they carry the code).
 */
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import type { EtlConfig } from '../config/schema.ts';
import { coerceError } from '../errors.ts';
import { listConnectionLogins, loginRowOf } from '../history/logins.ts';
import type { Logger } from '../logger.ts';
import { completeLogin, startLogin } from '../login/login-flow.ts';
import { secretKeyFromEnv } from '../secret-box.ts';
import {
  renderCallbackResult,
  renderLoginRedirect,
  renderConnections,
  type ConnectionView,
} from './connection-pages.ts';
import { sendPage, sendText } from './html.ts';

/** Path of the callback route; a redirectUri of the form https://<admin host>/oauth/callback points here. */
export const CALLBACK_PATH = '/oauth/callback';

/** What the login routes need. */
export interface LoginRoutesDeps {
  pool: pg.Pool;
  logger: Logger;
  /** The current jobs.yaml connections (undefined: the page lists what the database recorded, without links). */
  connections?: (() => EtlConfig['connections']) | undefined;
}

/** Registers the login routes on `app`. */
export function registerLoginRoutes(app: FastifyInstance, deps: LoginRoutesDeps): void {
  const configured = (): EtlConfig['connections'] => deps.connections?.() ?? {};
  const find = (name: string) => (Object.hasOwn(configured(), name) ? configured()[name] : undefined);

  app.get<{ Querystring: { loggedIn?: string } }>('/admin/connections', async (req, reply) => {
    const conns = configured();
    const rows = await listConnectionLogins(deps.pool, deps.connections ? Object.keys(conns) : undefined);
    const views: ConnectionView[] = deps.connections
      ? Object.entries(conns).map(([name, config]) => ({
          name,
          config,
          row: loginRowOf(rows, name, config),
        }))
      : rows.map((row) => ({ name: row.connection, config: undefined, row }));
    const loggedIn =
      typeof req.query.loggedIn === 'string' && find(req.query.loggedIn) ? req.query.loggedIn : undefined;
    return sendPage(reply, renderConnections(views, { loggedIn }), { noStore: true });
  });

  // A login changes state (a login state is recorded): it starts with the page's POST, never with a GET a link, an
  // image or a prefetch could send.
  app.get('/admin/connections/:name/login', async (_req, reply) => {
    reply.header('allow', 'POST');
    return sendText(reply, 405, 'a login starts with the "Log in" button of /admin/connections (POST)');
  });
  app.post<{ Params: { name: string } }>('/admin/connections/:name/login', async (req, reply) => {
    const connection = find(req.params.name);
    if (!connection) return sendText(reply, 404, `no connection ${req.params.name} in jobs.yaml`);
    try {
      const { url } = await startLogin(deps.pool, { name: req.params.name, connection }, 'admin', {
        logger: deps.logger,
      });
      deps.logger.info({ connection: req.params.name }, 'login started from the admin page');
      const page = renderLoginRedirect(req.params.name, url);
      return sendPage(reply, page, { noStore: true, referrer: 'no-referrer' });
    } catch (err) {
      return sendPage(reply, renderCallbackResult(false, coerceError(err).message), { status: 400 });
    }
  });

  app.get(CALLBACK_PATH, async (req, reply) => {
    const params = new URLSearchParams(req.url.slice(req.url.indexOf('?') + 1 || req.url.length));
    const send = (status: number, ok: boolean, text: string) =>
      sendPage(reply, renderCallbackResult(ok, text), { status, noStore: true, referrer: 'no-referrer' });
    let key;
    try {
      key = secretKeyFromEnv();
    } catch (err) {
      return send(500, false, `this admin server cannot store logins: ${coerceError(err).message}`);
    }
    try {
      const done = await completeLogin(deps.pool, key, find, params, { logger: deps.logger });
      if (done.startedBy === 'admin')
        return reply
          .header('cache-control', 'no-store')
          .redirect(`/admin/connections?loggedIn=${encodeURIComponent(done.connection)}`, 303);
      return send(
        200,
        true,
        `Connection "${done.connection}" is logged in (scopes granted: ${done.grantedScope ?? 'none named'}). ` +
          `report-etl login finishes in the terminal; you can close this window.`,
      );
    } catch (err) {
      return send(400, false, coerceError(err).message);
    }
  });
}
