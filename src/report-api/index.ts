/**
 * The Report Export Service client (spec report-export-service.md): discovery, Redis-shared access
 * token, report names, start / poll / pages / delete, and the typed errors of each.
 */
export { makeReportClient, parseJob, parseRowsAndPages, POLL_GROWTH, MIN_PAGING } from './job-client.ts';
export { withReportJob } from './with-report-job.ts';
export { encodeReportName, DEFAULT_REPORT_EXTENSION, type PathEncoding } from './report-name.ts';
export { tokenCacheKey, TokenCache, type CachedToken } from './token-cache.ts';
export { DEFAULT_RETRY, TRANSIENT_STATUSES, isTransientError, backoffDelayMs, sleep, type RetryPolicy } from './http.ts';
export { REPORT_API_PREFIX } from './api-request.ts';
export { DISCOVERY_PATH } from './discovery.ts';
export { RESUME_CHECK_BYTES } from './page-stream.ts';
export * from './errors.ts';
export type * from './types.ts';
