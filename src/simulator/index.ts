/**
 * A faithful to docs/report-export-service.md Report Export Service simulator over real HTTP
 * (docs/report-export-service.md), for tests, the demo and users' dry runs. {@link startSimulator} serves discovery,
 * the client credentials token endpoint and {report_api} (start, status, output pages in json, json_compact, txt and
 * xml_query, delete), with faults on demand. See the handler modules for the choices made where the service's
 * description shows nothing.
 */
import type { AddressInfo } from 'node:net';
import { silentLogger } from '../logger.ts';
import { zeroCounters, type SimContext } from './context.ts';
import { reportData } from './catalogue.ts';
import { FaultInjector } from './faults.ts';
import { pageCount } from './jobs.ts';
import { dataKey, PageCache } from './page-cache.ts';
import type { SimJob } from './jobs.ts';
import { makeServer, type SimControl } from './server.ts';
import { makeZonedFormatter } from './time-format.ts';
import { TokenStore } from './tokens.ts';
import { UserLogins } from './user-logins.ts';
import type {
  PrerenderResult,
  Simulator,
  SimulatorClient,
  SimulatorCounters,
  SimulatorOptions,
  SimulatorUser,
} from './types.ts';

export type {
  PrerenderResult,
  Simulator,
  SimulatorClient,
  SimulatorCounters,
  SimulatorEndpoint,
  SimulatorFaults,
  SimulatorOAuthCounters,
  SimulatorOptions,
  SimulatorUser,
} from './types.ts';
export { OFFLINE_VALIDITY_MS, ONLINE_VALIDITY_MS } from './user-logins.ts';
export { AUTH_PATH } from './auth-handlers.ts';
export { CATALOGUE, FAILING_MESSAGE, reportData, type ExtraReport } from './catalogue.ts';
export type { CanonicalValue, CatalogueEntry, ColumnKind, ReportColumn, ReportData } from './catalogue.ts';
export { txtBom } from './render-txt.ts';
export { REPORT_API } from './server.ts';
export { TOKEN_PATH, discoveryDocument } from './auth-handlers.ts';
export { DEFAULT_PAGING, DOCS_URL, RIGHTS_MESSAGE } from './report-handlers.ts';

/** The demo service users: one with every right, one without interface access (403), one without report rights. */
export const DEFAULT_CLIENTS: SimulatorClient[] = [
  { clientId: 'demo-client', clientSecret: 'demo-secret' },
  { clientId: 'no-access-client', clientSecret: 'no-access-secret', interfaceAccess: false },
  { clientId: 'no-rights-client', clientSecret: 'no-rights-secret', reportRights: false },
  // User-dependent service users (docs/report-export-service.md "User-dependent service user"): a public one (Client-ID
  // only) and a trusted one.
  { clientId: 'demo-user-client', userDependent: true },
  { clientId: 'demo-trusted-user-client', clientSecret: 'demo-trusted-secret', userDependent: true },
];

/**
 * The product users of the login page: anna has the report scope with offline access (refresh tokens live 60 days),
 * otto without offline access (10 hours), nina has no scope a service user may request (invalid_scope).
 */
export const DEFAULT_USERS: SimulatorUser[] = [
  {
    username: 'anna',
    password: 'anna-password',
    scopes: ['svc.pad', 'openid', 'email', 'profile', 'offline_access'],
    offlineAccess: true,
  },
  { username: 'otto', password: 'otto-password', scopes: ['svc.pad', 'openid'], offlineAccess: false },
  { username: 'nina', password: 'nina-password', scopes: [], offlineAccess: true },
];

/**
 * Starts a simulator and resolves once it listens.
 * @param opts see {@link SimulatorOptions}; all optional
 * @returns the running simulator; call close() when done
 * @throws RangeError for an unknown timezone; the listen error (e.g. EADDRINUSE) when the port is taken
 */
export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const host = opts.host ?? '127.0.0.1';
  const jobs = new Map<string, SimJob>();
  const tokens = new TokenStore();
  const faults = new FaultInjector(opts.faults ?? {}, opts.faultSeed ?? 1);
  let listenUrl = '';
  const ctx: SimContext = {
    baseUrl: (req) => (req.headers.host ? `http://${req.headers.host}` : listenUrl),
    clients: new Map((opts.clients ?? DEFAULT_CLIENTS).map((c) => [c.clientId, c])),
    tokens,
    logins: new UserLogins(opts.users ?? DEFAULT_USERS),
    jobs,
    faults,
    counters: zeroCounters(),
    zone: makeZonedFormatter(opts.timezone ?? 'Europe/Zurich'),
    logger: opts.logger ?? silentLogger,
    tokenLifetimeSeconds: opts.tokenLifetimeSeconds ?? 600,
    jobDurationMs: opts.jobDurationMs ?? 300,
    seed: opts.seed ?? 1,
    reports: new Map((opts.reports ?? []).map((r) => [r.path, r])),
    revision: 0,
    nameRules: { acceptBackslash: opts.acceptBackslash ?? true, acceptEncodedSlash: opts.acceptEncodedSlash ?? true },
    pageCache: opts.pageCache ? new PageCache() : undefined,
    productVersion: opts.productVersion,
    pkce: opts.pkce ?? true,
  };
  const control: SimControl = {
    counters: (): SimulatorCounters => ({ ...structuredClone(ctx.counters), openJobs: [...jobs.keys()] }),
    resetCounters: () => {
      ctx.counters = zeroCounters();
    },
    setFaults: (f) => {
      faults.faults = { ...f };
    },
    expireTokens: () => tokens.expireAll(),
    logoutUser: (username) => ctx.logins.logout(username),
    advanceClock: (ms) => ctx.logins.advance(ms),
    setRevision: (revision) => {
      ctx.revision = revision;
    },
  };
  const server = makeServer(ctx, control);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  listenUrl = `http://${urlHost}:${port}`;
  ctx.logger.info({ url: listenUrl }, 'simulator: listening');
  let closing: Promise<void> | undefined;
  return {
    url: listenUrl,
    port,
    ...control,
    oauthCounters: () => structuredClone(ctx.logins.counters),
    prerender(reportPath, parameters, outputType, paging): PrerenderResult {
      const cache = ctx.pageCache;
      if (!cache) throw new Error('prerender needs SimulatorOptions.pageCache');
      const data = reportData(reportPath, parameters, ctx.seed, { mandant: '', revision: ctx.revision }, ctx.reports);
      if (!data || data.failure)
        throw new Error(`cannot prerender ${reportPath}: ${data?.failure ?? 'no such report'}`);
      const key = dataKey(reportPath, parameters, ctx.seed, { mandant: '', revision: ctx.revision });
      const pages = pageCount(data.rowCount, paging);
      let bytes = 0;
      for (let p = 1; p <= pages; p++) bytes += cache.page(key, data, outputType, paging, p, ctx.zone).length;
      return { rows: data.rowCount, pages, bytes };
    },
    clearPageCache() {
      ctx.pageCache?.clear();
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
