/** The simulator's shared state, handed to every request handler. */
import type { IncomingMessage } from 'node:http';
import type { Logger } from '../logger.ts';
import type { FaultInjector } from './faults.ts';
import type { SimJob } from './jobs.ts';
import type { ExtraReport } from './catalogue.ts';
import type { PageCache } from './page-cache.ts';
import type { ReportNameRules } from './report-name.ts';
import type { ZonedFormatter } from './time-format.ts';
import type { TokenStore } from './tokens.ts';
import type { UserLogins } from './user-logins.ts';
import type { SimulatorClient, SimulatorCounters, SimulatorEndpoint } from './types.ts';

/** Endpoint names of SimulatorCounters.requests. */
export type Endpoint = SimulatorEndpoint;

/** Counters without the derived openJobs. */
export type CounterState = Omit<SimulatorCounters, 'openJobs'>;

/** Fresh zeroed counters. */
export function zeroCounters(): CounterState {
  return {
    tokenRequests: 0,
    discoveryRequests: 0,
    jobsCreated: 0,
    jobsDeleted: 0,
    peakOpenJobs: 0,
    requests: { discovery: 0, token: 0, start: 0, status: 0, output: 0, delete: 0 },
    unauthorized: 0,
    pagesServed: 0,
    bytesServed: 0,
    faultsInjected: { errors: 0, resets: 0 },
  };
}

/** Everything a handler needs. */
export interface SimContext {
  /** {base_url} as the caller sees it (from the Host header, falling back to the listening address). */
  baseUrl(req: IncomingMessage): string;
  clients: Map<string, SimulatorClient>;
  tokens: TokenStore;
  /** Login sessions, codes and refresh tokens of user-dependent service users. */
  logins: UserLogins;
  jobs: Map<string, SimJob>;
  faults: FaultInjector;
  counters: CounterState;
  zone: ZonedFormatter;
  logger: Logger;
  tokenLifetimeSeconds: number;
  jobDurationMs: number;
  seed: number;
  /** SimulatorOptions.reports by path. */
  reports: ReadonlyMap<string, ExtraReport>;
  /** The revision of the server's data (SimulatorControl.setRevision). */
  revision: number;
  nameRules: ReportNameRules;
  /** SimulatorOptions.pkce: whether the authorization endpoint and the code grant know PKCE. */
  pkce: boolean;
  /** SimulatorOptions.productVersion: types that need a later version are unknown to this server. */
  productVersion?: number | undefined;
  /** Set when SimulatorOptions.pageCache is on: pages are rendered once and served from memory. */
  pageCache?: PageCache;
}
