/**
 * The simulator's HTTP router over node:http: the service's paths (discovery, token, {report_api}) plus the
 * control paths under /_sim (GET counters, POST reset, POST faults, POST expire-tokens, POST logout, POST
 * advance-clock). Latency and 5xx faults are applied here, before a {report_api} request is authorised (as a gateway in
 * front of the server would).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { AUTH_PATH, handleDiscovery, handleToken, OAUTH_PREFIX, TOKEN_PATH } from './auth-handlers.ts';
import { handleAuthorize } from './login-page.ts';
import type { Endpoint, SimContext } from './context.ts';
import { BodyTooLargeError, REPORT_API_HEADERS, readBody, send, sendJson, sendProblem } from './http-util.ts';
import { handleOutput } from './page-handler.ts';
import { authorize, handleDelete, handleStart, handleStatus } from './report-handlers.ts';
import type { SimulatorCounters, SimulatorFaults } from './types.ts';

/** {report_api} (docs/report-export-service.md "Endpoints"). */
export const REPORT_API = '/api/svcreport/v1';

/** What the /_sim control paths act on. */
export interface SimControl {
  counters(): SimulatorCounters;
  resetCounters(): void;
  setFaults(f: SimulatorFaults): void;
  expireTokens(): void;
  logoutUser(username: string): boolean;
  advanceClock(ms: number): void;
  setRevision(revision: number): void;
}

const GATEWAY_TEXT: Record<number, string> = { 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout' };

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function handleSim(
  control: SimControl,
  method: string,
  path: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (method === 'GET' && path === '/_sim/counters') return sendJson(res, 200, control.counters());
  if (method === 'POST' && path === '/_sim/reset') {
    control.resetCounters();
    return send(res, 204, {});
  }
  if (method === 'POST' && path === '/_sim/expire-tokens') {
    control.expireTokens();
    return send(res, 204, {});
  }
  if (method === 'POST' && (path === '/_sim/logout' || path === '/_sim/advance-clock')) {
    let body: { username?: unknown; ms?: unknown };
    try {
      body = JSON.parse((await readBody(req)).toString('utf8') || '{}') as typeof body;
    } catch {
      body = {};
    }
    if (path === '/_sim/logout' && typeof body.username === 'string')
      return sendJson(res, 200, { loggedOut: control.logoutUser(body.username) });
    if (path === '/_sim/advance-clock' && typeof body.ms === 'number' && body.ms >= 0) {
      control.advanceClock(body.ms);
      return send(res, 204, {});
    }
    return sendProblem(res, 400, {
      title: 'Bad Request',
      detail: 'body must be {"username": "..."} (logout) or {"ms": n} (advance-clock)',
    });
  }
  if (method === 'POST' && path === '/_sim/revision') {
    let body: { revision?: unknown };
    try {
      body = JSON.parse((await readBody(req)).toString('utf8') || '{}') as typeof body;
    } catch {
      body = {};
    }
    if (typeof body.revision !== 'number' || !Number.isInteger(body.revision) || body.revision < 0)
      return sendProblem(res, 400, { title: 'Bad Request', detail: 'body must be {"revision": n} (n ≥ 0)' });
    control.setRevision(body.revision);
    return send(res, 204, {});
  }
  if (method === 'POST' && path === '/_sim/faults') {
    let faults: SimulatorFaults;
    try {
      faults = JSON.parse((await readBody(req)).toString('utf8') || '{}') as SimulatorFaults;
      if (typeof faults !== 'object' || faults === null || Array.isArray(faults)) throw new Error('not an object');
    } catch {
      return sendProblem(res, 400, { title: 'Bad Request', detail: 'body must be a JSON SimulatorFaults object' });
    }
    control.setFaults(faults);
    return send(res, 204, {});
  }
  return send(res, 404, {});
}

async function handleReportApi(
  ctx: SimContext,
  method: string,
  rest: string[],
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  let endpoint: Endpoint | undefined;
  if (method === 'POST' && rest.length === 3 && rest[0] === 'report') endpoint = 'start';
  else if (rest[0] === 'jobs' && rest.length === 2)
    endpoint = method === 'DELETE' ? 'delete' : method === 'GET' ? 'status' : undefined;
  else if (rest[0] === 'jobs' && rest[2] === 'output' && rest.length <= 4 && method === 'GET') endpoint = 'output';
  if (!endpoint) return send(res, 404, REPORT_API_HEADERS);
  ctx.counters.requests[endpoint]++;

  const status = ctx.faults.drawError();
  if (status) {
    ctx.counters.faultsInjected.errors++;
    return send(res, status, { 'Content-Type': 'text/plain' }, `${status} ${GATEWAY_TEXT[status]}`);
  }
  const client = authorize(ctx, req, res);
  if (!client) return;
  switch (endpoint) {
    case 'start':
      return handleStart(ctx, client, rest[1]!, rest[2]!, req, res);
    case 'status':
      return handleStatus(ctx, rest[1]!, res);
    case 'delete':
      return handleDelete(ctx, rest[1]!, res);
    case 'output':
      return handleOutput(ctx, rest[1]!, rest[3], res);
  }
}

async function route(ctx: SimContext, control: SimControl, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const method = req.method ?? 'GET';
  const rawPath = (req.url ?? '/').split('?')[0]!;
  if (rawPath.startsWith('/_sim/')) return handleSim(control, method, rawPath, req, res);

  const latency = ctx.faults.latencyMs;
  if (latency > 0) await sleep(latency);

  if (rawPath === '/.well-known/openid-configuration' && method === 'GET') {
    ctx.counters.discoveryRequests++;
    ctx.counters.requests.discovery++;
    return handleDiscovery(ctx, req, res);
  }
  if (rawPath === TOKEN_PATH && method === 'POST') {
    ctx.counters.tokenRequests++;
    ctx.counters.requests.token++;
    return handleToken(ctx, req, res);
  }
  if (rawPath.startsWith(`${REPORT_API}/`)) {
    // Split the raw path: the reportname segment stays URL-encoded until the name rules look at it.
    return handleReportApi(ctx, method, rawPath.slice(REPORT_API.length + 1).split('/'), req, res);
  }
  if (rawPath === AUTH_PATH && (method === 'GET' || method === 'POST')) return handleAuthorize(ctx, req, res);
  if (rawPath.startsWith(`${OAUTH_PREFIX}/`)) {
    return sendJson(res, 501, {
      error: 'not_implemented',
      error_description: 'only discovery, the authorization endpoint and the token endpoint are simulated',
    });
  }
  return send(res, 404, {});
}

/** Makes the (not yet listening) HTTP server. */
export function makeServer(ctx: SimContext, control: SimControl): Server {
  const server = createServer({ keepAliveTimeout: 5_000 }, (req, res) => {
    route(ctx, control, req, res).catch((err: unknown) => {
      if (err instanceof BodyTooLargeError) {
        if (!res.headersSent) sendProblem(res, 413, { title: 'Payload Too Large', detail: err.message });
        return;
      }
      ctx.logger.error({ err, method: req.method, path: req.url }, 'simulator: request failed');
      if (!res.headersSent) send(res, 500, { 'Content-Type': 'text/plain' }, 'internal simulator error');
      else res.destroy();
    });
  });
  return server;
}
