/**
 * Discovery and token endpoints (docs/report-export-service.md "Endpoints" #5 and #7, "Authentication"): the client
 * credentials grant, and for user-dependent service users the authorization-code and refresh grants (state in
 * user-logins.ts; a trusted client must send its client_secret, a public one only its client_id). A refused code or
 * refresh token is 400 invalid_grant (RFC 6749 section 5.2). Failures at the token endpoint are not shown in the
 * service's description; the simulator answers as RFC 6749 section 5.2 says: 400 invalid_request /
 * unsupported_grant_type, 401 invalid_client (with WWW-Authenticate: Basic when the credentials came in the header),
 * JSON bodies {error, error_description}.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SimContext } from './context.ts';
import { readBody, sendJson } from './http-util.ts';

/** Path prefix of the OAuth endpoints (docs/report-export-service.md "Versioning" 1: oauth2/v1). */
export const OAUTH_PREFIX = '/oauth/oauth2/v1';
/** Authorization endpoint path (docs/report-export-service.md "Endpoints" #6). */
export const AUTH_PATH = `${OAUTH_PREFIX}/auth`;
/** Token endpoint path (docs/report-export-service.md "Endpoints" #7). */
export const TOKEN_PATH = `${OAUTH_PREFIX}/token`;

/** The discovery document (docs/report-export-service.md "Discovery document"), URLs under `base`. */
export function discoveryDocument(base: string): Record<string, unknown> {
  return {
    issuer: `${base}${OAUTH_PREFIX}`,
    authorization_endpoint: `${base}${AUTH_PATH}`,
    token_endpoint: `${base}${TOKEN_PATH}`,
    token_revocation_endpoint: `${base}${OAUTH_PREFIX}/revoke`,
    userinfo_endpoint: `${base}${OAUTH_PREFIX}/userinfo`,
    end_session_endpoint: `${base}${OAUTH_PREFIX}/logout`,
    jwks_uri: `${base}${OAUTH_PREFIX}/certs`,
    registration_endpoint: `${base}${OAUTH_PREFIX}/clients`,
    scopes_supported: ['svc.pad', 'openid', 'email', 'profile', 'offline_access'],
    token_endpoint_auth_signing_alg_values_supported: ['RS256'],
    id_token_signing_alg_values_supported: ['RS256'],
  };
}

/** GET /.well-known/openid-configuration (docs/report-export-service.md "Endpoints" #5). */
export function handleDiscovery(ctx: SimContext, req: IncomingMessage, res: ServerResponse): void {
  sendJson(res, 200, discoveryDocument(ctx.baseUrl(req)));
}

const TOKEN_HEADERS = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

function oauthError(res: ServerResponse, status: number, error: string, description: string, basic = false): void {
  const headers: Record<string, string> = { ...TOKEN_HEADERS };
  if (basic) headers['WWW-Authenticate'] = 'Basic realm="oauth"';
  sendJson(res, status, { error, error_description: description }, headers, 'application/json;charset=utf-8');
}

/** Client-ID and secret from an Authorization: Basic header, or undefined. */
function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  const m = header ? /^Basic\s+(\S+)\s*$/i.exec(header) : null;
  if (!m) return undefined;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { id: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
}

/** POST token endpoint, client credentials grant (docs/report-export-service.md "Client credentials grant"). */
export async function handleToken(ctx: SimContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    return oauthError(res, 400, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded');
  }
  const raw = (await readBody(req, 65_536)).toString('utf8');
  const form = new URLSearchParams(raw);
  const grant = form.get('grant_type');
  if (ctx.faults.faults.echo === 'token') {
    const refresh = grant === 'refresh_token';
    const echoed = `received Authorization: ${req.headers.authorization ?? '(none)'} and body: ${raw}`;
    return oauthError(res, refresh ? 400 : 401, refresh ? 'invalid_grant' : 'invalid_client', echoed);
  }
  if (!grant) return oauthError(res, 400, 'invalid_request', 'grant_type is missing');
  if (grant === 'authorization_code' || grant === 'refresh_token') return handleUserGrant(ctx, req, res, grant, form);
  if (grant !== 'client_credentials')
    return oauthError(res, 400, 'unsupported_grant_type', `grant_type ${grant} is not supported here`);
  ctx.logins.counters.grants.client_credentials++;
  const fromHeader = basicCredentials(req.headers.authorization);
  const bodyId = form.get('client_id');
  const bodySecret = form.get('client_secret');
  if (fromHeader && bodySecret !== null) {
    return oauthError(res, 400, 'invalid_request', 'client credentials given both in the header and in the body');
  }
  const creds = fromHeader ?? (bodyId !== null && bodySecret !== null ? { id: bodyId, secret: bodySecret } : undefined);
  const client = creds ? ctx.clients.get(creds.id) : undefined;
  if (
    !creds ||
    !client ||
    client.userDependent ||
    client.clientSecret === undefined ||
    client.clientSecret !== creds.secret
  ) {
    ctx.logger.debug({ clientId: creds?.id }, 'simulator: token refused');
    return oauthError(res, 401, 'invalid_client', 'Client authentication failed', fromHeader !== undefined);
  }
  const issuer = `${ctx.baseUrl(req)}${OAUTH_PREFIX}`;
  const token = ctx.tokens.issue(client.clientId, ctx.tokenLifetimeSeconds, ctx.faults.tokenLifetimeFactor, issuer);
  sendJson(
    res,
    200,
    {
      access_token: token,
      token_type: 'Bearer',
      expires_in: ctx.tokenLifetimeSeconds,
      ...(client.scopes ? { scope: client.scopes.join(' ') } : {}),
    },
    TOKEN_HEADERS,
    'application/json;charset=utf-8',
  );
}

/**
 * The authorization-code grant (docs/report-export-service.md "User-dependent service user" step 4: client_id, code,
 * redirect_uri, client_secret for a trusted client) and the refresh grant (docs/report-export-service.md "Refresh":
 * client_id, refresh_token); the first returns scope and refresh_token, the second scope only (Refresh rule 1).
 */
async function handleUserGrant(
  ctx: SimContext,
  req: IncomingMessage,
  res: ServerResponse,
  grant: 'authorization_code' | 'refresh_token',
  form: URLSearchParams,
): Promise<void> {
  ctx.logins.counters.grants[grant]++;
  const fromHeader = basicCredentials(req.headers.authorization);
  const clientId = form.get('client_id') ?? fromHeader?.id ?? null;
  const client = clientId ? ctx.clients.get(clientId) : undefined;
  if (!client || !client.userDependent)
    return oauthError(res, 401, 'invalid_client', 'Client authentication failed', fromHeader !== undefined);
  if (client.clientSecret !== undefined && (form.get('client_secret') ?? fromHeader?.secret) !== client.clientSecret) {
    return oauthError(
      res,
      401,
      'invalid_client',
      'Client authentication failed: a trusted client must send its client_secret',
      fromHeader !== undefined,
    );
  }
  const issuer = `${ctx.baseUrl(req)}${OAUTH_PREFIX}`;
  const body: Record<string, unknown> = { token_type: 'Bearer', expires_in: ctx.tokenLifetimeSeconds };
  if (grant === 'authorization_code') {
    const verifier = ctx.pkce ? form.get('code_verifier') : null;
    const redeemed = ctx.logins.redeemCode(form.get('code') ?? '', client.clientId, form.get('redirect_uri'), verifier);
    if (!redeemed.ok) return oauthError(res, 400, 'invalid_grant', redeemed.reason);
    body.scope = redeemed.code.scope;
    body.refresh_token = ctx.logins.issueRefreshToken(redeemed.code);
  } else {
    const check = ctx.logins.checkRefreshToken(form.get('refresh_token') ?? '', client.clientId);
    if (!check.ok) {
      ctx.logins.counters.refusedRefreshes++;
      return oauthError(res, 400, 'invalid_grant', check.reason);
    }
    body.scope = check.scope;
  }
  const token = ctx.tokens.issue(client.clientId, ctx.tokenLifetimeSeconds, ctx.faults.tokenLifetimeFactor, issuer);
  sendJson(res, 200, { access_token: token, ...body }, TOKEN_HEADERS, 'application/json;charset=utf-8');
}
