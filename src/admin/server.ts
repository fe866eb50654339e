/**
 * The admin HTTP server for on-call staff (fastify 5, docs/architecture.md): `/healthz` and `/readyz` (open),
 * `/metrics` (metrics.ts), the jobs overview at `/admin` (overview-routes.ts; without the live jobs.yaml, a redirect
 * to the run list), the run history (run-routes.ts), bull-board at `/admin/queues` (bull-board.ts), the login form
 * (`/admin/login`, login-page.ts) and Log out, and the connections' logins with `/oauth/callback` (login-routes.ts).
 *
 * Who may read what, the Host check against DNS rebinding and the 429 after refused credentials: auth.ts and
 * docs/operations.md "Admin access". `trustProxy` is off, so behind a proxy on the same machine every caller looks
 * local: configure a token there. Requests that change state (any method but GET/HEAD under /admin) must come from
 * our own origin when the browser sends `Origin`. Query strings (an old login link carries the token) and form
 * bodies are never logged.
 */
import { traceUrlProblem } from '../trace-link.ts';
import type { RunQueue } from '../queue/queue.ts';
import { fastify, LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import { scheduleZone } from '../config/job-zone.ts';
import type { EtlConfig } from '../config/schema.ts';
import type { LiveConfig } from '../config/live-config.ts';
import { registerOverviewRoutes } from './overview-routes.ts';
import type { Logger } from '../logger.ts';
import {
  adminAuthFromEnv,
  allowedHostsFromEnv,
  hasCredentials,
  isAllowedHost,
  isAuthConfigured,
  isAuthorized,
  isLoopback,
  isMetricsAuthorized,
  isSameOrigin,
  metricsTokenFromEnv,
  rejectMetrics,
  RefusalLimit,
  rejectUnauthorized,
  safeEqual,
  sessionCookie,
  sessionOf,
  sessionSecondsLeft,
  type AdminAuth,
} from './auth.ts';
import { registerBullBoard } from './bull-board.ts';
import { checkReadiness } from './health.ts';
import { makeAdminMetrics } from './metrics.ts';
import { ReportSlots } from '../report-api/report-slots.ts';
import { DEFAULT_QUEUE_PREFIX } from '../queue/names.ts';
import { registerRunRoutes } from './run-routes.ts';
import { registerLoginRoutes } from './login-routes.ts';
import { sendPage, sendText } from './html.ts';
import { renderLoginPage, type LoginNotice } from './login-page.ts';

/** Dependencies and options of {@link startAdminServer}. */
export interface AdminServerOptions {
  /** PostgreSQL pool with the run history (etl.runs, etl.attempts). Not closed by the server. */
  pool: pg.Pool;
  /** Redis connection (readiness, token request counter). Not closed by the server. */
  redis: Redis;
  /** The BullMQ queue `report-etl` (bull-board, queue gauge, replays). Not closed by the server. */
  queue: RunQueue;
  logger: Logger;
  /** TCP port; default 3000; 0 picks a free one (see the returned `url`). */
  port?: number;
  /** Interface to listen on; default 127.0.0.1. */
  host?: string;
  /** Admin credentials; default from env ADMIN_TOKEN / ADMIN_USER + ADMIN_PASSWORD. `{}` means none. */
  auth?: AdminAuth;
  /** Host names besides localhost and IP addresses (auth.ts isAllowedHost); default from env (allowedHostsFromEnv). */
  allowedHosts?: readonly string[];
  /** Bearer token of metrics scrapers (`/metrics` only); default from env METRICS_TOKEN. `''` means none. */
  metricsToken?: string;
  /**
   * Whether /metrics is open to every caller (default false: it needs METRICS_TOKEN or admin auth, or comes from
   * loopback when neither is set). Only for a scraper on a network where job names are no secret.
   */
  metricsPublic?: boolean;
  /** Redis key prefix of the token request counter and of logged-out sessions (default 'report-etl:'). */
  keyPrefix?: string;
  /** ADMIN_PUBLIC_URL (default from env): when https, the session cookie is `Secure` (a TLS proxy in front). */
  publicUrl?: string | undefined;
  /** jobs.yaml, so that replays get the job's attempts and backoff (without it: one attempt). */
  config?: EtlConfig;
  /**
   * The current jobs.yaml connections (live config), for the connections page, its "Log in" links and the login
   * callback; default: those of `config`. Without either, the page lists what the database recorded.
   */
  connections?: () => EtlConfig['connections'];
  /**
   * The live jobs.yaml (valid and invalid jobs): the jobs overview at `/admin` and the per-job metrics need it.
   * Without it `/admin` redirects to the run list.
   */
  liveConfig?: LiveConfig;
}

/** A running admin server. */
export interface AdminServer {
  /** Base URL, e.g. `http://127.0.0.1:3000`. */
  url: string;
  /** Stops listening and waits for open requests; the pool, Redis and queue stay open. Idempotent. */
  close(): Promise<void>;
}

/** The time zone every job of `config` runs in (its schedule's), when they share one; else, or without one, UTC. */
function sharedZone(config: EtlConfig | undefined): string {
  const zones = new Set(Object.values(config?.jobs ?? {}).map((j) => scheduleZone(config!, j)));
  return zones.size === 1 ? [...zones][0]! : 'UTC';
}

/** The request's path, without its query string (never logged). */
const pathOf = (req: { url?: string }) => (req.url ?? '').split('?')[0]!;

/**
 * Starts the admin server and resolves once it listens.
 * @throws the listen error (e.g. EADDRINUSE), after releasing what was set up
 */
export async function startAdminServer(deps: AdminServerOptions): Promise<AdminServer> {
  const auth = deps.auth ?? adminAuthFromEnv();
  const metricsToken = (deps.metricsToken ?? metricsTokenFromEnv()) || undefined;
  const metricsPublic = deps.metricsPublic ?? false;
  const allowedHosts = deps.allowedHosts ?? allowedHostsFromEnv();
  const behindTls = (deps.publicUrl ?? process.env.ADMIN_PUBLIC_URL ?? '').startsWith('https:');
  const secure = (req: FastifyRequest) => behindTls || req.protocol === 'https';
  const keyPrefix = deps.keyPrefix ?? `${deps.queue.opts.prefix ?? DEFAULT_QUEUE_PREFIX}:`;
  const loggedOutKey = (session: string) =>
    `${keyPrefix}admin:logged-out:${createHash('sha256').update(session).digest('hex')}`;
  const refusals = new RefusalLimit();
  // Not no-referrer: Chromium then posts the form with `Origin: null`, which the same-origin check refuses.
  const loginPage = (reply: FastifyReply, status: number, notice?: LoginNotice) =>
    sendPage(reply, renderLoginPage(notice), { status, noStore: true, referrer: 'same-origin' });
  const host = deps.host ?? '127.0.0.1';
  const log = deps.logger.child(
    { component: 'admin' },
    {
      serializers: {
        req: (req: { method?: string; url?: string }) => ({ method: req.method, path: pathOf(req) }),
      },
    },
  );
  const app = fastify({
    loggerInstance: log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: false,
    bodyLimit: 1024 * 1024,
    // Run keys and job names are path parameters: fastify's default of 100 characters answered 414 for long run keys.
    routerOptions: { maxParamLength: 1000 },
  });

  if (!isAuthConfigured(auth)) {
    log.warn(
      { host },
      '!!! ADMIN ACCESS IS NOT PROTECTED: neither ADMIN_TOKEN nor ADMIN_USER/ADMIN_PASSWORD is set; the admin pages ' +
        '(and /metrics, unless METRICS_TOKEN is set) answer only requests from 127.0.0.1 / ::1 !!!',
    );
  }

  const traceProblem = traceUrlProblem();
  if (traceProblem) log.warn(`${traceProblem}; trace ids on the admin pages stay plain text until it is fixed`);

  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });

  app.addHook('onRequest', async (req, reply) => {
    const route = req.routeOptions.url ?? pathOf(req);
    if (route !== '/metrics' && route !== '/admin' && !route.startsWith('/admin/')) return;
    const remote = req.socket.remoteAddress ?? '';
    const refused = { method: req.method, path: pathOf(req), remote };
    if (!isAllowedHost(req.headers.host, allowedHosts)) {
      log.info(refused, 'admin request refused: its Host is not this server (ADMIN_ALLOWED_HOSTS)');
      return sendText(
        reply,
        403,
        'this server answers to localhost, its IP addresses and the names of ADMIN_ALLOWED_HOSTS',
      );
    }
    const wait = refusals.waitSeconds(remote);
    if (wait > 0) {
      reply.header('retry-after', String(wait));
      return sendText(reply, 429, `too many refused credentials from this address: try again in ${wait} s`);
    }
    if (route === '/metrics') {
      if (metricsPublic || isMetricsAuthorized(req, auth, metricsToken)) return;
      if (hasCredentials(req)) refusals.refused(remote);
      log.info(refused, 'metrics request refused');
      return rejectMetrics(reply, auth, metricsToken);
    }
    if (route === '/admin/login') return;
    const session = sessionOf(req);
    if (!isAuthorized(req, auth) || (session && (await deps.redis.exists(loggedOutKey(session))))) {
      if (hasCredentials(req)) refusals.refused(remote);
      log.info(refused, 'admin request refused');
      // A browser (no basic auth to ask for) gets the login form, still as a 401.
      const browser = req.method === 'GET' && (req.headers.accept ?? '').includes('text/html');
      if (auth?.token && !auth.basic && browser) return loginPage(reply, 401, 'required');
      return rejectUnauthorized(reply, auth);
    }
    if (req.method !== 'GET' && req.method !== 'HEAD' && !isSameOrigin(req)) {
      return sendText(reply, 403, 'cross-origin request refused');
    }
  });
  app.addHook('onResponse', async (req, reply) => {
    log.debug(
      { method: req.method, path: pathOf(req), status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'admin request',
    );
  });

  app.get('/healthz', async (_req, reply) => sendText(reply, 200, 'ok'));
  app.get('/readyz', async (_req, reply) => {
    const readiness = await checkReadiness(deps);
    if (!readiness.ready) log.warn({ checks: readiness.checks }, 'not ready');
    return reply.code(readiness.ready ? 200 : 503).send(readiness);
  });

  // The slots' usage is read without waiting in line: no subscriber connection is ever opened for it.
  const slots = new ReportSlots(deps.redis, { prefix: deps.queue.opts.prefix ?? DEFAULT_QUEUE_PREFIX });
  const metrics = makeAdminMetrics({ ...deps, keyPrefix, config: deps.liveConfig, slots });
  // The home page: the jobs overview when the live jobs.yaml is known, else the run list.
  const home = deps.liveConfig ? '/admin' : '/admin/runs';
  app.get('/metrics', async (_req, reply) => {
    const text = await metrics.render();
    return reply.type(metrics.contentType).send(text);
  });

  // The form. A token in the query (the old login link) is not taken: it would stay in the history and in logs.
  app.get<{ Querystring: { token?: string; loggedOut?: string } }>('/admin/login', async (req, reply) => {
    if (req.query.token !== undefined) return loginPage(reply, 400, 'token-in-url');
    if (!auth?.token) return loginPage(reply, 200, 'not-configured');
    return loginPage(reply, 200, req.query.loggedOut !== undefined ? 'logged-out' : undefined);
  });
  app.post<{ Body: { token?: unknown } | undefined }>('/admin/login', async (req, reply) => {
    if (!isSameOrigin(req)) return sendText(reply, 403, 'cross-origin request refused');
    const token = auth?.token;
    const given = typeof req.body?.token === 'string' ? req.body.token : '';
    if (!token) return loginPage(reply, 401, 'not-configured');
    if (given === '') return loginPage(reply, 401, 'missing');
    if (!safeEqual(given, token)) {
      refusals.refused(req.socket.remoteAddress ?? '');
      log.info({ remote: req.socket.remoteAddress }, 'admin login refused: wrong token');
      return loginPage(reply, 401, 'wrong');
    }
    return reply
      .header('set-cookie', sessionCookie(token, secure(req)))
      .header('cache-control', 'no-store')
      .redirect(home, 303);
  });
  // Ends the session on every admin server (they share Redis), not only in this browser; then the login form.
  app.post('/admin/logout', async (req, reply) => {
    const session = sessionOf(req);
    const left = session ? sessionSecondsLeft(session) : 0;
    if (left > 0) await deps.redis.set(loggedOutKey(session!), '1', 'EX', left);
    return reply
      .header('set-cookie', sessionCookie(undefined, secure(req)))
      .header('cache-control', 'no-store')
      .redirect('/admin/login?loggedOut', 303);
  });
  app.get('/', async (_req, reply) => reply.redirect(home, 302));
  if (deps.liveConfig) registerOverviewRoutes(app, { pool: deps.pool, config: deps.liveConfig, slots });
  else app.get('/admin', async (_req, reply) => reply.redirect('/admin/runs', 302));

  const config = () => deps.config ?? deps.liveConfig?.current();
  registerRunRoutes(app, { pool: deps.pool, queue: deps.queue, logger: log, config });
  const connections = deps.config || deps.liveConfig ? () => config()!.connections : undefined;
  registerLoginRoutes(app, { pool: deps.pool, logger: log, connections: deps.connections ?? connections });
  await registerBullBoard(app, deps.queue, sharedZone(config()));

  try {
    await app.listen({ port: deps.port ?? 3000, host });
  } catch (err) {
    await app.close().catch(() => undefined);
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : (deps.port ?? 3000);
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  if (!isAuthConfigured(auth) && !isLoopback(host) && host !== 'localhost') {
    log.warn({ url }, 'admin server listens beyond loopback without credentials: remote callers get 403 on /admin');
  }
  const metricsAccess = metricsPublic
    ? 'public'
    : [metricsToken && 'metrics-token', isAuthConfigured(auth) && 'admin'].filter(Boolean).join('+') || 'loopback-only';
  log.info(
    {
      url,
      auth: auth?.token ? 'token' : auth?.basic ? 'basic' : 'loopback-only',
      metrics: metricsAccess,
      allowedHosts,
    },
    'admin server listening',
  );
  let closing: Promise<void> | undefined;
  return {
    url,
    close: () => (closing ??= app.close()),
  };
}
