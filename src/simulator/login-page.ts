/**
 * The authorization endpoint (docs/report-export-service.md "Endpoints" #6, "User-dependent service user" steps 1-3): a
 * real HTML login form, the adoption of a session that is logged in already (step 2), and the redirect with code and
 * session_state (step 3) or with error=invalid_scope (docs/report-export-service.md "Errors": no access to any
 * requested scope, with session_state; more than 25 scopes). Choices where the service's description shows nothing: an
 * unknown client or a redirect URI that is not configured is a 400 page, never a redirect (RFC 6749 section 4.1.2.1);
 * `state` is echoed (RFC 6749 section 4.1.2); a wrong password shows the form again with 401; the session is a cookie
 * `sim_session` (HttpOnly, SameSite=Lax). With SimulatorOptions.pkce (default) a code_challenge binds the code (RFC
 * 7636: S256 or plain, plain when no method is named; another method or a malformed challenge is an
 * error=invalid_request redirect); without, both PKCE parameters are ignored.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { discoveryDocument } from './auth-handlers.ts';
import type { SimContext } from './context.ts';
import { readBody, send } from './http-util.ts';
import type { SimulatorClient } from './types.ts';
import type { PkceMethod } from './user-logins.ts';

/** Scopes per authorization request (docs/report-export-service.md "Limits"). */
export const MAX_SCOPES = 25;
/** Name of the login session cookie. */
export const SESSION_COOKIE = 'sim_session';

const ESC: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const esc = (v: string): string => v.replace(/[&<>"']/g, (c) => ESC[c]!);

function htmlPage(
  res: ServerResponse,
  status: number,
  title: string,
  body: string,
  headers: Record<string, string> = {},
): void {
  const html =
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>\n` +
    '<style>body{font:15px system-ui,sans-serif;max-width:28rem;margin:3rem auto}label{display:block;margin:.6rem 0}' +
    'input{width:100%;padding:.3rem}\n' +
    `button{padding:.4rem 1rem;margin-top:.6rem}.error{color:#b00}</style></head><body><h1>${esc(title)}</h1>${body}` +
    '</body></html>';
  send(
    res,
    status,
    { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store', 'X-Frame-Options': 'DENY', ...headers },
    html,
  );
}

function cookie(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** The validated authorization request, or an answer was sent. */
interface AuthRequest {
  client: SimulatorClient;
  redirectUri: string;
  scopes: string[];
  state: string | null;
  responseType: string | null;
  /** The PKCE parameters as sent (checked in handleAuthorize); undefined without PKCE. */
  challenge: { value: string; method: string } | undefined;
}

/** RFC 7636 section 4.2: a challenge is 43 to 128 characters of the unreserved set. */
const CHALLENGE = /^[A-Za-z0-9._~-]{43,128}$/;

function readRequest(ctx: SimContext, params: URLSearchParams, res: ServerResponse): AuthRequest | undefined {
  const client = ctx.clients.get(params.get('client_id') ?? '');
  if (!client || !client.userDependent) {
    htmlPage(
      res,
      400,
      'Login not possible',
      `<p class="error">Unknown client_id or not a user-dependent service user.</p>`,
    );
    return undefined;
  }
  const redirectUri = params.get('redirect_uri') ?? '';
  let ok: boolean;
  try {
    ok = /^https?:$/.test(new URL(redirectUri).protocol);
  } catch {
    ok = false;
  }
  if (!ok || (client.redirectUris && !client.redirectUris.includes(redirectUri))) {
    htmlPage(
      res,
      400,
      'Login not possible',
      `<p class="error">redirect_uri is missing or not configured for this service user.</p>`,
    );
    return undefined;
  }
  const scopes = (params.get('scope') ?? '').split(' ').filter((s) => s !== '');
  const value = ctx.pkce ? params.get('code_challenge') : null;
  return {
    client,
    redirectUri,
    scopes,
    state: params.get('state'),
    responseType: params.get('response_type'),
    challenge: value === null ? undefined : { value, method: params.get('code_challenge_method') ?? 'plain' },
  };
}

function redirect(
  res: ServerResponse,
  r: AuthRequest,
  params: Record<string, string>,
  headers: Record<string, string> = {},
): void {
  const url = new URL(r.redirectUri);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  if (r.state !== null) url.searchParams.set('state', r.state);
  send(res, 302, { Location: url.toString(), 'Cache-Control': 'no-store', ...headers });
}

function form(r: AuthRequest, adoptable: string | undefined, error?: string): string {
  const hidden = [
    ['response_type', r.responseType ?? ''],
    ['client_id', r.client.clientId],
    ['scope', r.scopes.join(' ')],
    ['redirect_uri', r.redirectUri],
    ['state', r.state ?? ''],
    ['code_challenge', r.challenge?.value ?? ''],
    ['code_challenge_method', r.challenge?.method ?? ''],
  ]
    .filter(([k, v]) => (k !== 'state' && !k!.startsWith('code_challenge')) || v !== '')
    .map(([k, v]) => `<input type="hidden" name="${k}" value="${esc(v!)}">`)
    .join('');
  const adopt = adoptable
    ? `<form method="post"><p>Logged in as <b id="session-user">${esc(adoptable)}</b>.</p>${hidden}` +
      '<input type="hidden" name="adopt" value="1">' +
      `<button type="submit" id="adopt">Continue as ${esc(adoptable)}</button></form><hr>`
    : '';
  return `<p>Client <code>${esc(r.client.clientId)}</code> asks for: <code>${esc(r.scopes.join(' '))}</code></p>${adopt}
${error ? `<p class="error" role="alert">${esc(error)}</p>` : ''}<form method="post" id="login">${hidden}
<label>User <input name="username" id="username" autocomplete="username"></label>
<label>Password <input name="password" id="password" type="password" autocomplete="current-password"></label>
<button type="submit" id="submit">Log in</button></form>`;
}

/**
 * Issues the redirect for `username`: error=invalid_scope when the user may use none of the requested scopes,
 * else a code for the scopes common to request, service user and user (docs/report-export-service.md "Scope rules"
 * 2-5).
 */
function finish(
  ctx: SimContext,
  res: ServerResponse,
  r: AuthRequest,
  username: string,
  sessionId: string,
  headers: Record<string, string>,
): void {
  const user = ctx.logins.users.get(username)!;
  const serviceScopes = r.client.scopes ?? (discoveryDocument('').scopes_supported as string[]);
  const granted = r.scopes.filter((s) => serviceScopes.includes(s) && user.scopes.includes(s));
  const sessionState = ctx.logins.sessionState(sessionId);
  if (granted.length === 0) {
    return redirect(
      res,
      r,
      {
        error: 'invalid_scope',
        error_description: 'The user has no access to any of the requested scopes',
        session_state: sessionState,
      },
      headers,
    );
  }
  const code = ctx.logins.issueCode({
    clientId: r.client.clientId,
    redirectUri: r.redirectUri,
    username,
    sessionId,
    scope: granted.join(' '),
    challenge: r.challenge && { value: r.challenge.value, method: r.challenge.method as PkceMethod },
  });
  redirect(res, r, { code, session_state: sessionState }, headers);
}

/** GET and POST of the authorization endpoint. */
export async function handleAuthorize(ctx: SimContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const post = req.method === 'POST';
  const params = post
    ? new URLSearchParams((await readBody(req, 65_536)).toString('utf8'))
    : new URL(req.url ?? '/', 'http://x').searchParams;
  const r = readRequest(ctx, params, res);
  if (!r) return;
  if (r.responseType !== 'code')
    return redirect(res, r, { error: 'unsupported_response_type', error_description: 'response_type must be code' });
  if (r.challenge && (!['S256', 'plain'].includes(r.challenge.method) || !CHALLENGE.test(r.challenge.value))) {
    return redirect(res, r, {
      error: 'invalid_request',
      error_description: 'code_challenge must be 43-128 unreserved characters, code_challenge_method S256 or plain',
    });
  }
  if (r.scopes.length > MAX_SCOPES) {
    return redirect(res, r, {
      error: 'invalid_scope',
      error_description: `Too many scopes requested: ${r.scopes.length}, at most ${MAX_SCOPES}`,
    });
  }
  const sessionId = cookie(req, SESSION_COOKIE);
  const sessionUser = ctx.logins.sessionUser(sessionId);
  if (!post) return htmlPage(res, 200, 'Log in', form(r, sessionUser));
  if (params.get('adopt') === '1' && sessionUser) return finish(ctx, res, r, sessionUser, sessionId!, {});
  const user = ctx.logins.users.get(params.get('username') ?? '');
  if (!user || user.password !== params.get('password')) {
    ctx.logger.debug({ username: params.get('username') }, 'simulator: login refused');
    return htmlPage(res, 401, 'Log in', form(r, sessionUser, 'Wrong user or password.'));
  }
  const sid = ctx.logins.startSession(user.username);
  finish(ctx, res, r, user.username, sid, { 'Set-Cookie': `${SESSION_COOKIE}=${sid}; Path=/; HttpOnly; SameSite=Lax` });
}
