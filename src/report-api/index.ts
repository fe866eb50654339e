/**
 * The Report Export Service client (docs/report-export-service.md): discovery, Redis-shared access
 * token, report names, start / poll / pages / delete, and the typed errors of each.
 */
export { makeReportClient, parseJob, parseRowsAndPages, POLL_GROWTH } from './report-client.ts';
export {
  AUTH_KINDS,
  MAX_SCOPES,
  SCOPES_PROBLEM,
  type AuthKind,
  CREDENTIALS_WAYS,
  MIN_PAGING,
  MANDANT_PATTERN,
  PAGING_PROBLEM,
  startRequestProblems,
  type CredentialsWay,
} from './report-rules.ts';
export { makeReportClients, type ClientLease, type ReportClients } from './client-registry.ts';
export { withReportJob } from './with-report-job.ts';
export {
  checkReportName,
  encodeReportName,
  isReportNameProblem,
  DEFAULT_REPORT_EXTENSION,
  PATH_ENCODINGS,
  REPORT_EXTENSIONS,
  type PathEncoding,
  type ReportNameProblem,
} from './report-name.ts';
export { tokenCacheKey, tokenRequestsKey, TokenCache, type AccessTokens, type CachedToken } from './token-cache.ts';
export {
  authorizationUrl,
  exchangeAuthorizationCode,
  readAuthorizationResponse,
  refreshAccessToken,
  type AuthorizationRequest,
  type UserClient,
  type UserTokenResponse,
} from './oauth-grants.ts';
export { makeUserAccessTokens } from './user-tokens.ts';
export { discoverEndpoints, type DiscoveredEndpoints } from './discovery.ts';
export { HttpTransport } from './http.ts';
export {
  DEFAULT_RETRY,
  TRANSIENT_STATUSES,
  isTransientError,
  backoffDelayMs,
  sleep,
  type RetryPolicy,
} from './http.ts';
export { REPORT_API_PREFIX } from './api-request.ts';
export { DISCOVERY_PATH } from './discovery.ts';
export { RESUME_CHECK_BYTES } from './page-stream.ts';
export * from './errors.ts';
export type * from './types.ts';
