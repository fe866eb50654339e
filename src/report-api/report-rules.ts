/**
 * The rules requests to the service must follow (docs/report-export-service.md "Limits", "Endpoints" #1, "Client credentials grant"),
 * defined once: the client applies them, and jobs.yaml validation (src/config) uses the same definitions so that
 * a mistake is found by `validate` already. Report names have their own module (report-name.ts). No imports:
 * config loads this without the HTTP client.
 */

/** How the token request carries the credentials (docs/report-export-service.md "Client credentials grant"); the first is the default. */
export const CREDENTIALS_WAYS = ['header', 'body'] as const;
/** One of {@link CREDENTIALS_WAYS}. */
export type CredentialsWay = (typeof CREDENTIALS_WAYS)[number];

/**
 * The two kinds of service user (docs/report-export-service.md "Authentication"): client_credentials ("Client credentials grant", Client-ID
 * and Client-Secret) and authorization_code ("User-dependent service user": a product user logs in once, runs use the
 * refresh grant). The first is the default.
 */
export const AUTH_KINDS = ['client_credentials', 'authorization_code'] as const;
/** One of {@link AUTH_KINDS}. */
export type AuthKind = (typeof AUTH_KINDS)[number];

/** Most scopes one authorization request may name (docs/report-export-service.md "Limits": Scopes per authorization request, 25). */
export const MAX_SCOPES = 25;

/** What is wrong with more than {@link MAX_SCOPES} scopes. */
export const SCOPES_PROBLEM = `at most ${MAX_SCOPES} scopes per authorization request (docs/report-export-service.md "Limits": Scopes per authorization request; the server refuses more with error=invalid_scope)`;

/** Minimum rows per page (docs/report-export-service.md "Limits": below 10 the server silently uses 10000 rows per page). */
export const MIN_PAGING = 10;

/** What is wrong with a paging below {@link MIN_PAGING}. */
export const PAGING_PROBLEM = `paging must be at least ${MIN_PAGING}: below ${MIN_PAGING} the server silently uses 10000 rows per page`;

/** A mandant (client number, docs/report-export-service.md "Endpoints" #1) is written in digits: `7777`, or `007` kept as text. */
export const MANDANT_PATTERN = /^[0-9]+$/;

/**
 * Checks paging and mandant of a request.
 * @returns what is wrong, one line each (empty when both are fine)
 */
export function startRequestProblems(r: { paging: number; mandant: string }): string[] {
  const problems: string[] = [];
  if (!Number.isInteger(r.paging) || r.paging < MIN_PAGING)
    problems.push(`report.paging is ${r.paging}; ${PAGING_PROBLEM}`);
  if (!MANDANT_PATTERN.test(r.mandant)) problems.push(`report.mandant "${r.mandant}" must be digits`);
  return problems;
}
