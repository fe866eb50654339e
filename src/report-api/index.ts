/** The Report Export Service client (docs/report-export-service.md): the names other layers use. */
export { makeReportClient } from './report-client.ts';
export { MIN_PAGING } from './report-rules.ts';
export { makeReportClients, type ReportClients } from './client-registry.ts';
export { withReportJob } from './with-report-job.ts';
export { encodeReportName } from './report-name.ts';
export { tokenCacheKey, TokenCache } from './token-cache.ts';
export {
  authorizationUrl,
  exchangeAuthorizationCode,
  newPkce,
  readAuthorizationResponse,
  type Pkce,
} from './oauth-grants.ts';
export { discoverEndpoints, type DiscoveredEndpoints } from './discovery.ts';
export { DEFAULT_RETRY, HttpTransport } from './http.ts';
export { sleep } from '../backoff.ts';
export * from './errors.ts';
export type * from './types.ts';
