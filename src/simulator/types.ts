/** Public option, fault and counter types of the Report Export Service simulator. */
import type { ExtraReport } from './catalogue.ts';
import type { Logger } from '../logger.ts';
import type { DocumentOutputType, OutputType } from '../vocabulary.ts';

/**
 * A service user the simulator knows (docs/report-export-service.md "What the service does" 4-5, "Rights for report
 * access").
 */
export interface SimulatorClient {
  clientId: string;
  /**
   * Client-Secret. A client-credentials service user has one; a user-dependent one only when it is a trusted
   * (confidential) client, which must then send it with the authorization-code and refresh grants
   * (docs/report-export-service.md "User-dependent service user" step 4).
   */
  clientSecret?: string;
  /**
   * A user-dependent service user (docs/report-export-service.md "User-dependent service user"): the authorization-code
   * and refresh grants.
   */
  userDependent?: boolean;
  /**
   * Scopes configured for the service user (docs/report-export-service.md "Scope rules" 1). Client credentials:
   * returned as the token response's scope when set (an entity API kind user). User-dependent: default every scope of
   * discovery.
   */
  scopes?: string[];
  /**
   * Redirect URIs configured in advance (docs/report-export-service.md "User-dependent service user" step 1); default:
   * any absolute http(s) URI.
   */
  redirectUris?: string[];
  /** Report interface access option; false => every {report_api} call answers 403 problem+json. Default true. */
  interfaceAccess?: boolean;
  /** Report application right and licence; false => starting a report ends FinishedError at once. Default true. */
  reportRights?: boolean;
}

/**
 * A product user who can log in on the simulator's login page (docs/report-export-service.md "User-dependent service
 * user" step 2).
 */
export interface SimulatorUser {
  username: string;
  password: string;
  /** Scopes assigned in the standard user management (docs/report-export-service.md "Scope rules" 2). */
  scopes: string[];
  /**
   * Offline access active: refresh tokens live 60 days; disabled: 10 hours (docs/report-export-service.md "Refresh"
   * rule 2). Default true.
   */
  offlineAccess?: boolean;
}

/** Faults to inject; every probability is drawn from a PRNG seeded with SimulatorOptions.faultSeed. */
export interface SimulatorFaults {
  /** Added to every response, in ms. */
  latencyMs?: number;
  /** 0..1 probability that a {report_api} request answers 502/503/504 with a plain text body. */
  errorRate?: number;
  /** 0..1 probability that an output page response is cut off midway (connection closed after some bytes). */
  resetRate?: number;
  /** Tokens really die after expires_in * factor seconds although expires_in says otherwise (e.g. 0.1). */
  tokenLifetimeFactor?: number;
  /** FinishedSuccess messages claim this many rows more than are served (rows= and pages= from the claim). */
  misreportRows?: number;
  /**
   * A server that echoes what it received: `token` refuses every grant (401 invalid_client; 400 invalid_grant for a
   * refresh) with the request's Authorization header and form in error_description; `report` refuses every
   * {report_api} call with 403, its Authorization header in SvcServletExceptionMessage and the problem's detail.
   */
  echo?: 'token' | 'report';
}

/** What the OAuth side of the simulator saw. */
export interface SimulatorOAuthCounters {
  grants: { client_credentials: number; authorization_code: number; refresh_token: number };
  /** Refused refresh grants (invalid_grant). */
  refusedRefreshes: number;
  /** Successful logins on the login page (password or adopted session). */
  logins: number;
  /** Refresh tokens issued so far (each a new one). */
  refreshTokensIssued: string[];
  /**
   * PKCE (RFC 7636): codes issued for a code_challenge (by method), code grants whose code_verifier matched, and
   * those refused for a missing or wrong one. All stay 0 with SimulatorOptions.pkce false.
   */
  pkce: { challenged: { S256: number; plain: number }; verified: number; refused: number };
}

/** Options of {@link startSimulator}. */
export interface SimulatorOptions {
  /** TCP port; default 0 (ephemeral). */
  port?: number;
  /** Interface to bind; default 127.0.0.1. */
  host?: string;
  /** Service users; default DEFAULT_CLIENTS. */
  clients?: SimulatorClient[];
  /** Product users of the login page; default DEFAULT_USERS. */
  users?: SimulatorUser[];
  /**
   * Whether the authorization endpoint knows PKCE (RFC 7636; the service's description shows none): true (default)
   * binds a code to its code_challenge and refuses a code grant without the matching code_verifier; false ignores
   * both parameters, as a server without PKCE does.
   */
  pkce?: boolean;
  /** expires_in of issued tokens, in s; default 600 (docs/report-export-service.md "Limits"). */
  tokenLifetimeSeconds?: number;
  /** How long a job stays Running before it finishes, in ms; default 300. */
  jobDurationMs?: number;
  /** Data seed; default 1. */
  seed?: number;
  /** IANA zone of txt timestamps and of the offsets in ISO timestamps; default 'Europe/Zurich'. */
  timezone?: string;
  /** Whether %5C works as sub folder separator; default true. */
  acceptBackslash?: boolean;
  /** Whether %2F works as sub folder separator; default true (false simulates a sanitizing server: 400). */
  acceptEncodedSlash?: boolean;
  faults?: SimulatorFaults;
  /** Seed of the fault PRNG, so tests are reproducible; default 1. */
  faultSeed?: number;
  logger?: Logger;
  /**
   * Product version of the simulated server (docs/report-export-service.md "Versioning" 2): a start with an output type
   * that needs a later version (pdf 2025, excel/word 2026) is answered 400 problem+json "Unknown outputType", as a
   * server that does not know the type. Default: undefined, every type works.
   */
  productVersion?: number;
  /**
   * Keep every rendered output page in memory and serve it from there (for benchmarks: serving then costs
   * next to nothing). Memory grows by the bytes of every distinct page asked for; see Simulator.prerender
   * and clearPageCache. Reset faults bypass the cache. Default false.
   */
  pageCache?: boolean;
  /** Reports served besides the catalogue (e.g. public datasets as test data); a path of the catalogue is replaced. */
  reports?: readonly ExtraReport[];
}

/** What {@link Simulator.prerender} rendered. */
export interface PrerenderResult {
  rows: number;
  pages: number;
  /** Bytes of all the pages. */
  bytes: number;
}

/** Endpoint names of {@link SimulatorCounters.requests}. */
export type SimulatorEndpoint = 'discovery' | 'token' | 'start' | 'status' | 'output' | 'delete';

/** What the simulator saw since start or the last resetCounters(). */
export interface SimulatorCounters {
  tokenRequests: number;
  discoveryRequests: number;
  jobsCreated: number;
  jobsDeleted: number;
  /** Most jobs open (created and not deleted) at once, seen at each creation. */
  peakOpenJobs: number;
  /** Ids of jobs created and not deleted (live state: resetCounters() does not clear it). */
  openJobs: string[];
  /** Requests per endpoint (every key always present). */
  requests: Record<SimulatorEndpoint, number>;
  /** {report_api} requests refused with 401 (missing, unknown or expired token). */
  unauthorized: number;
  /** Output pages served completely, and their body bytes. */
  pagesServed: number;
  bytesServed: number;
  faultsInjected: { errors: number; resets: number };
}

/** A running simulator. */
export interface Simulator {
  /** Base URL, e.g. http://127.0.0.1:45678 (the service's {base_url}). */
  url: string;
  port: number;
  counters(): SimulatorCounters;
  resetCounters(): void;
  /** Replaces the active faults. */
  setFaults(f: SimulatorFaults): void;
  /** Every issued token is refused (401) from now on. */
  expireTokens(): void;
  /**
   * Logs a product user out (by self or an administrator, docs/report-export-service.md "Refresh" rule 4): their login
   * sessions end and their refresh tokens become invalid. Also POST /_sim/logout {"username": "..."}.
   * @returns whether the user had a session or a refresh token
   */
  logoutUser(username: string): boolean;
  /**
   * Moves the clock of refresh-token validity forward by `ms` (e.g. 11 hours). Also POST /_sim/advance-clock {"ms": n}.
   */
  advanceClock(ms: number): void;
  /**
   * Sets the revision of the server's data (0 at start): the reports that follow it (Finance/Bookings) correct, add
   * and delete rows, as an ERP's late postings do. Also POST /_sim/revision {"revision": n}.
   */
  setRevision(revision: number): void;
  /** Requests per grant type at the token endpoint, and logins on the login page, since start. */
  oauthCounters(): SimulatorOAuthCounters;
  /**
   * Renders every page of a report run into the page cache, so that the first run already is served from
   * memory (SimulatorOptions.pageCache must be on).
   * @param reportPath folders/name.ext, e.g. 'Big.avw'; parameters as in the start request (e.g. ROWS)
   * @param paging rows per page (the start request's paging after docs/report-export-service.md "Limits")
   * @throws Error when the cache is off, the report does not exist or its parameters make it fail
   */
  prerender(
    reportPath: string,
    parameters: Record<string, string>,
    outputType: Exclude<OutputType, DocumentOutputType>,
    paging: number,
  ): PrerenderResult;
  /** Drops every cached page (memory back to the operating system at the next GC). */
  clearPageCache(): void;
  /** Stops listening and drops open connections; a second call waits for the first. */
  close(): Promise<void>;
}
