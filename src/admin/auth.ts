/**
 * Access control of the admin server (docs/operations.md "Admin access"): ADMIN_TOKEN as a bearer token or as the
 * login form's session cookie (its issue time and an HMAC of it keyed by the token, never the token; HttpOnly,
 * SameSite=Strict, Path=/admin, taken for 12 h), basic auth (ADMIN_USER, ADMIN_PASSWORD), or with neither, loopback
 * callers only. `/metrics` also takes the scrapers' METRICS_TOKEN, which opens nothing else. Every secret comparison
 * is constant-time over SHA-256 digests. Whatever is configured, a Host header must name this server
 * ({@link isAllowedHost}), and an address with 10 refused credentials within a minute gets 429 ({@link RefusalLimit}).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendText } from './html.ts';

/** Configured credentials; both may be set, and either then admits. */
export interface AdminAuth {
  /** Bearer token (env ADMIN_TOKEN). */
  token?: string | undefined;
  /** Basic-auth user and password (env ADMIN_USER, ADMIN_PASSWORD). */
  basic?: { user: string; password: string } | undefined;
}

/** Name of the browser session cookie set by `/admin/login`. */
export const SESSION_COOKIE = 'report_etl_admin';

/** Realm announced in `WWW-Authenticate` when basic auth is configured. */
const REALM = 'report-etl admin';

/** Realm announced in `WWW-Authenticate: Bearer` by a refused `/metrics` request. */
const METRICS_REALM = 'report-etl metrics';

/**
 * Reads {@link AdminAuth} from ADMIN_TOKEN / ADMIN_USER + ADMIN_PASSWORD; empty values count as unset.
 * @returns undefined when nothing is configured
 */
export function adminAuthFromEnv(env: NodeJS.ProcessEnv = process.env): AdminAuth | undefined {
  const token = env.ADMIN_TOKEN || undefined;
  const basic =
    env.ADMIN_USER && env.ADMIN_PASSWORD ? { user: env.ADMIN_USER, password: env.ADMIN_PASSWORD } : undefined;
  return token || basic ? { token, basic } : undefined;
}

/**
 * Reads the metrics scraper's bearer token from METRICS_TOKEN; an empty value counts as unset.
 * @returns undefined when not set
 */
export function metricsTokenFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.METRICS_TOKEN || undefined;
}

/** Whether `auth` holds at least one credential. */
export function isAuthConfigured(auth: AdminAuth | undefined): boolean {
  return Boolean(auth?.token || (auth?.basic?.user && auth.basic.password));
}

/** Constant-time string equality (compares SHA-256 digests, so lengths leak nothing either). */
export function safeEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a, 'utf8').digest();
  const db = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(da, db);
}

/** How long a session cookie is taken, in seconds (12 h). */
export const SESSION_MAX_AGE_S = 12 * 3600;

/** The session cookie value for `token` issued at `issuedAtS` (Unix seconds): `<issuedAtS>.<hex HMAC-SHA256>`. */
export function sessionValue(token: string, issuedAtS: number): string {
  return `${issuedAtS}.${createHmac('sha256', token).update(`report-etl admin session v2 ${issuedAtS}`).digest('hex')}`;
}

/** Whether `cookie` is a session of `token` issued less than {@link SESSION_MAX_AGE_S} ago. */
function isLiveSession(cookie: string, token: string, nowS = Date.now() / 1000): boolean {
  const issued = Number(cookie.slice(0, cookie.indexOf('.')));
  const age = nowS - issued;
  // A minute's clock skew between admin servers is allowed.
  return (
    Number.isSafeInteger(issued) &&
    age > -60 &&
    age < SESSION_MAX_AGE_S &&
    safeEqual(cookie, sessionValue(token, issued))
  );
}

/** The session cookie's value in the request, if any. */
export function sessionOf(req: FastifyRequest): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Whether a request comes over the loopback interface. */
export function isLoopback(address: string | undefined): boolean {
  return address === '127.0.0.1' || address === '::1' || address === '::ffff:127.0.0.1';
}

/** The name of a Host header without its port (an IPv6 address keeps its brackets); undefined when malformed. */
function hostName(host: string | undefined): string | undefined {
  return /^(\[[0-9a-f:.]+\]|[^\s:/@[\]]+)(:\d*)?$/i.exec(host ?? '')?.[1];
}

/**
 * The names besides `localhost` a Host header may give (lower case): the host of ADMIN_PUBLIC_URL and those of
 * ADMIN_ALLOWED_HOSTS (comma-separated, e.g. `etl.example.com,etl-admin.internal`).
 */
export function allowedHostsFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  const names = (env.ADMIN_ALLOWED_HOSTS ?? '').split(',').map((n) => n.trim().toLowerCase());
  if (URL.canParse(env.ADMIN_PUBLIC_URL ?? '')) names.push(new URL(env.ADMIN_PUBLIC_URL!).hostname.toLowerCase());
  return names.filter(Boolean);
}

/**
 * Whether a Host header names this server: `localhost`, an IP address, or one of `allowed` (any port). A page whose
 * DNS name was rebound to this server's address sends that name, so it is refused; an IP address can only be the
 * page's own origin, never a name an attacker controls.
 */
export function isAllowedHost(host: string | undefined, allowed: readonly string[]): boolean {
  const name = hostName(host)?.toLowerCase();
  if (name === undefined) return false;
  return name === 'localhost' || isIP(name.replace(/^\[(.*)\]$/, '$1')) !== 0 || allowed.includes(name);
}

/**
 * Refused credentials per client address: at most `max` within `windowMs` (a fixed window, counted in this process),
 * then every request of that address that needs credentials waits for the window's end. Behind a proxy every
 * caller shares its address.
 */
export class RefusalLimit {
  private readonly refusals = new Map<string, { count: number; until: number }>();
  private readonly max: number;
  private readonly windowMs: number;

  constructor(max = 10, windowMs = 60_000) {
    this.max = max;
    this.windowMs = windowMs;
  }

  /** Seconds until `address` may try again; 0 when it may now. */
  waitSeconds(address: string, now = Date.now()): number {
    const r = this.refusals.get(address);
    return r && r.until > now && r.count >= this.max ? Math.ceil((r.until - now) / 1000) : 0;
  }

  /** Counts a refused credential of `address`. */
  refused(address: string, now = Date.now()): void {
    if (this.refusals.size > 10_000) for (const [a, r] of this.refusals) if (r.until <= now) this.refusals.delete(a);
    const r = this.refusals.get(address);
    if (r && r.until > now) r.count++;
    else this.refusals.set(address, { count: 1, until: now + this.windowMs });
  }
}

/** Whether the request carries a credential: an Authorization header or the session cookie. */
export function hasCredentials(req: FastifyRequest): boolean {
  return Boolean(req.headers.authorization) || sessionOf(req) !== undefined;
}

/**
 * A caller trusted without credentials: over loopback, naming this machine in its Host header (`localhost`,
 * `127.0.0.1` or `[::1]`, any port). A page of another site open in a browser on this machine reaches loopback too,
 * by a DNS name rebound to 127.0.0.1: its Host header names that site, and is refused (DNS rebinding).
 */
function isLocalCaller(req: FastifyRequest): boolean {
  const name = hostName(req.headers.host);
  return isLoopback(req.socket.remoteAddress) && (name === 'localhost' || name === '127.0.0.1' || name === '[::1]');
}

/** The `Authorization` header split into lower-case scheme and credential ('' when absent). */
function authorizationOf(req: FastifyRequest): { scheme: string; credential: string } {
  const header = req.headers.authorization ?? '';
  const space = header.indexOf(' ');
  return {
    scheme: space > 0 ? header.slice(0, space).toLowerCase() : '',
    credential: space > 0 ? header.slice(space + 1).trim() : '',
  };
}

/**
 * Whether the request carries valid credentials for `auth` (bearer header, session cookie, or basic auth).
 * Without configured credentials: whether it comes from loopback and names this machine in its Host header
 * ({@link isLocalCaller}).
 */
export function isAuthorized(req: FastifyRequest, auth: AdminAuth | undefined): boolean {
  if (!isAuthConfigured(auth)) return isLocalCaller(req);
  const { scheme, credential } = authorizationOf(req);
  let ok = false;
  if (auth!.token) {
    if (scheme === 'bearer') ok = safeEqual(credential, auth!.token) || ok;
    const cookie = sessionOf(req);
    if (cookie !== undefined) ok = isLiveSession(cookie, auth!.token) || ok;
  }
  if (auth!.basic && scheme === 'basic') {
    const decoded = Buffer.from(credential, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon >= 0) {
      // Both halves are always compared, so timing does not tell which one was wrong.
      const userOk = safeEqual(decoded.slice(0, colon), auth!.basic.user);
      const passwordOk = safeEqual(decoded.slice(colon + 1), auth!.basic.password);
      ok = (userOk && passwordOk) || ok;
    }
  }
  return ok;
}

/** Answers 401 (or 403 for a non-loopback caller of an unconfigured server), asking for basic auth when configured. */
export function rejectUnauthorized(reply: FastifyReply, auth: AdminAuth | undefined): FastifyReply {
  if (!isAuthConfigured(auth)) {
    return sendText(
      reply,
      403,
      'admin access is limited to 127.0.0.1 (as http://127.0.0.1 or http://localhost): set ADMIN_TOKEN or ' +
        'ADMIN_USER and ADMIN_PASSWORD',
    );
  }
  if (auth!.basic) reply.header('www-authenticate', `Basic realm="${REALM}", charset="UTF-8"`);
  const hint = auth!.token
    ? 'send Authorization: Bearer <token>, or log in with the form of /admin/login'
    : 'use basic auth';
  return sendText(reply, 401, `unauthorized: ${hint}`);
}

/**
 * Whether the request may read `/metrics`:
 * - `Authorization: Bearer <metricsToken>` when a metrics token is set (constant-time compare);
 * - or valid admin credentials when those are configured ({@link isAuthorized}: bearer, session cookie, basic);
 * - with neither configured: a loopback caller (as for the admin pages).
 * A set metrics token is required from loopback callers too.
 * @param metricsToken METRICS_TOKEN, or undefined when not set
 */
export function isMetricsAuthorized(
  req: FastifyRequest,
  auth: AdminAuth | undefined,
  metricsToken: string | undefined,
): boolean {
  if (!metricsToken && !isAuthConfigured(auth)) return isLocalCaller(req);
  if (metricsToken) {
    const { scheme, credential } = authorizationOf(req);
    if (scheme === 'bearer' && safeEqual(credential, metricsToken)) return true;
  }
  return isAuthConfigured(auth) && isAuthorized(req, auth);
}

/**
 * Answers a refused `/metrics` request: 403 for a non-loopback caller when nothing is configured, else 401 with
 * `WWW-Authenticate` (Bearer when a token admits, Basic when only basic auth does). Never names a configured value.
 */
export function rejectMetrics(
  reply: FastifyReply,
  auth: AdminAuth | undefined,
  metricsToken: string | undefined,
): FastifyReply {
  if (!metricsToken && !isAuthConfigured(auth)) {
    return sendText(
      reply,
      403,
      'metrics are limited to 127.0.0.1 (as http://127.0.0.1 or http://localhost): set METRICS_TOKEN (or ' +
        'ADMIN_TOKEN) to let a scraper in',
    );
  }
  const bearer = Boolean(metricsToken || auth?.token);
  reply.header(
    'www-authenticate',
    bearer ? `Bearer realm="${METRICS_REALM}"` : `Basic realm="${REALM}", charset="UTF-8"`,
  );
  const ways = [
    metricsToken ? 'Authorization: Bearer <METRICS_TOKEN>' : '',
    auth?.token ? 'Authorization: Bearer <ADMIN_TOKEN>' : '',
    auth?.basic ? 'the admin basic auth' : '',
  ];
  return sendText(reply, 401, `unauthorized: send ${ways.filter(Boolean).join(', or ')}`);
}

/**
 * The `Set-Cookie` header for a browser session after the login form (HttpOnly, SameSite=Strict,
 * Path=/admin, 12 h), or with no `token` the one that removes it (logout).
 * @param secure add `Secure` (the request came over https, or ADMIN_PUBLIC_URL is https: a TLS proxy)
 */
export function sessionCookie(token: string | undefined, secure: boolean): string {
  const value = token === undefined ? '' : sessionValue(token, Math.floor(Date.now() / 1000));
  return (
    `${SESSION_COOKIE}=${value}; Path=/admin; HttpOnly; SameSite=Strict; ` +
    `Max-Age=${token === undefined ? 0 : SESSION_MAX_AGE_S}${secure ? '; Secure' : ''}`
  );
}

/** Seconds until a session cookie value expires (0 when it has, or is no session). */
export function sessionSecondsLeft(cookie: string): number {
  const issued = Number(cookie.slice(0, cookie.indexOf('.')));
  return Number.isSafeInteger(issued) ? Math.max(0, Math.ceil(issued + SESSION_MAX_AGE_S - Date.now() / 1000)) : 0;
}

/**
 * Whether a state-changing request (POST) comes from our own pages: when the browser sends `Origin`, its host
 * must be the request's `Host`. Stops cross-site form posts riding on basic auth or the cookie.
 */
export function isSameOrigin(req: FastifyRequest): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}
