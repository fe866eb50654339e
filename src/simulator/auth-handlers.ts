/**
 * Discovery and token endpoints (spec "Endpoints" #5 and #7, "Authentication"). Only the client
 * credentials grant is simulated. Failures at the token endpoint are not shown in the spec; the simulator
 * answers as RFC 6749 section 5.2 says: 400 invalid_request / unsupported_grant_type, 401 invalid_client
 * (with WWW-Authenticate: Basic when the credentials came in the header), JSON bodies
 * {error, error_description}.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SimContext } from './context.ts';
import { readBody, sendJson } from './http-util.ts';

/** Path prefix of the OAuth endpoints (spec "Versioning" 1: oauth2/v1). */
export const OAUTH_PREFIX = '/oauth/oauth2/v1';
/** Token endpoint path (spec "Endpoints" #7). */
export const TOKEN_PATH = `${OAUTH_PREFIX}/token`;

/** The discovery document (spec "Discovery document"), URLs under `base`. */
export function discoveryDocument(base: string): Record<string, unknown> {
  return {
    issuer: `${base}${OAUTH_PREFIX}`,
    authorization_endpoint: `${base}${OAUTH_PREFIX}/auth`,
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

/** GET /.well-known/openid-configuration (spec "Endpoints" #5). */
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

/** POST token endpoint, client credentials grant (spec "Client credentials grant"). */
export async function handleToken(ctx: SimContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    return oauthError(res, 400, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded');
  }
  const form = new URLSearchParams((await readBody(req, 65_536)).toString('utf8'));
  const grant = form.get('grant_type');
  if (!grant) return oauthError(res, 400, 'invalid_request', 'grant_type is missing');
  if (grant !== 'client_credentials') return oauthError(res, 400, 'unsupported_grant_type', `grant_type ${grant} is not supported here`);
  const fromHeader = basicCredentials(req.headers.authorization);
  const bodyId = form.get('client_id');
  const bodySecret = form.get('client_secret');
  if (fromHeader && bodySecret !== null) {
    return oauthError(res, 400, 'invalid_request', 'client credentials given both in the header and in the body');
  }
  const creds = fromHeader ?? (bodyId !== null && bodySecret !== null ? { id: bodyId, secret: bodySecret } : undefined);
  const client = creds ? ctx.clients.get(creds.id) : undefined;
  if (!creds || !client || client.clientSecret !== creds.secret) {
    ctx.logger.debug({ clientId: creds?.id }, 'simulator: token refused');
    return oauthError(res, 401, 'invalid_client', 'Client authentication failed', fromHeader !== undefined);
  }
  const issuer = `${ctx.baseUrl(req)}${OAUTH_PREFIX}`;
  const token = ctx.tokens.issue(client.clientId, ctx.tokenLifetimeSeconds, ctx.faults.tokenLifetimeFactor, issuer);
  sendJson(
    res,
    200,
    { access_token: token, token_type: 'Bearer', expires_in: ctx.tokenLifetimeSeconds },
    TOKEN_HEADERS,
    'application/json;charset=utf-8',
  );
}
