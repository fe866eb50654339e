/**
 * The rules requests must follow (docs/report-export-service.md "Limits", "Endpoints" #1), defined once for the
 * client and for jobs.yaml validation, so `validate` finds a mistake already. No imports: config loads this alone.
 */

/** How the token request carries the credentials ("Client credentials grant"); the first is the default. */
export const CREDENTIALS_WAYS = ['header', 'body'] as const;
export type CredentialsWay = (typeof CREDENTIALS_WAYS)[number];

/**
 * The kinds of service user ("Authentication"): client_credentials (Client-ID and Client-Secret) and
 * authorization_code (a product user logs in once, runs use the refresh grant). The first is the default.
 */
export const AUTH_KINDS = ['client_credentials', 'authorization_code'] as const;
export type AuthKind = (typeof AUTH_KINDS)[number];

/** Most scopes one authorization request may name ("Limits"). */
export const MAX_SCOPES = 25;

/** What is wrong with more than {@link MAX_SCOPES} scopes. */
export const SCOPES_PROBLEM =
  `at most ${MAX_SCOPES} scopes per authorization request (docs/report-export-service.md "Limits": Scopes per ` +
  'authorization request; the server refuses more with error=invalid_scope)';

/** Minimum rows per page ("Limits"). */
export const MIN_PAGING = 10;

/** What is wrong with a paging below {@link MIN_PAGING}. */
export const PAGING_PROBLEM =
  `paging must be at least ${MIN_PAGING}: below ${MIN_PAGING} the server silently uses ` + '10000 rows per page';

/** A mandant (client number) is digits: `7777`, or `007` kept as text. */
export const MANDANT_PATTERN = /^[0-9]+$/;

/** What is wrong with a request's paging and mandant, one line each. */
export function startRequestProblems(r: { paging: number; mandant: string }): string[] {
  const problems: string[] = [];
  if (!Number.isInteger(r.paging) || r.paging < MIN_PAGING)
    problems.push(`report.paging is ${r.paging}; ${PAGING_PROBLEM}`);
  if (!MANDANT_PATTERN.test(r.mandant)) problems.push(`report.mandant "${r.mandant}" must be digits`);
  return problems;
}
