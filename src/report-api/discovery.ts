/**
 * The discovery document (docs/report-export-service.md "Endpoints" #5, "Obtaining the token endpoint"): read on every start,
 * because the token endpoint may change.
 */
import { ServerUnreachableError, TokenError } from './errors.ts';
import { readJsonAnswer, readSnippet, retryTransient, type HttpTransport, type RetryPolicy } from './http.ts';

/** Path of the discovery document below {base_url} (docs/report-export-service.md "Endpoints" #5). */
export const DISCOVERY_PATH = '/.well-known/openid-configuration';

/** Joins {base_url} (with or without a trailing slash, may carry a path) and an absolute path. */
export function joinUrl(baseUrl: string, path: string): string {
  return baseUrl.replace(/\/+$/, '') + path;
}

/** The endpoints of the discovery document report-etl uses, as absolute URLs. */
export interface DiscoveredEndpoints {
  /** issuer (docs/report-export-service.md "Discovery document"); the {base_url} when the document names none. */
  issuer: string;
  tokenEndpoint: string;
  /** authorization_endpoint (docs/report-export-service.md "Endpoints" #6), undefined when the document names none. */
  authorizationEndpoint: string | undefined;
}

/**
 * Reads the discovery document (docs/report-export-service.md "Obtaining the token endpoint": on every start) and
 * returns the issuer, the token endpoint and the authorization endpoint, each resolved against {base_url}; transient
 * failures are retried.
 * @throws ServerUnreachableError (the server cannot be reached at all); TokenError (the document cannot be read
 *   otherwise or has no token_endpoint); AbortedError
 */
export async function discoverEndpoints(
  baseUrl: string,
  http: HttpTransport,
  retry: RetryPolicy,
  signal?: AbortSignal,
): Promise<DiscoveredEndpoints> {
  const url = joinUrl(baseUrl, DISCOVERY_PATH);
  let doc: unknown;
  try {
    doc = await retryTransient(
      async () => {
        const res = await http.send({
          method: 'GET',
          url,
          headers: { accept: 'application/json' },
          signal,
          stage: 'token',
        });
        if (res.statusCode !== 200) {
          const snippet = await readSnippet(res, http.redact);
          throw new TokenError(
            `discovery document ${DISCOVERY_PATH} answered ${res.statusCode}${snippet ? `: ${snippet}` : ''}`,
            {
              httpStatus: res.statusCode,
            },
          );
        }
        return readJsonAnswer(res, 'token', http.redact);
      },
      retry,
      signal,
    );
  } catch (err) {
    if (
      err instanceof TokenError ||
      err instanceof ServerUnreachableError ||
      (err as { code?: string }).code === 'ABORTED'
    )
      throw err;
    throw new TokenError(`discovery document ${url} could not be read: ${(err as Error).message}`, { cause: err });
  }
  const tokenEndpoint = (doc as { token_endpoint?: unknown } | null)?.token_endpoint;
  if (typeof tokenEndpoint !== 'string' || tokenEndpoint.length === 0) {
    throw new TokenError(`discovery document ${url} has no token_endpoint`);
  }
  const base = joinUrl(baseUrl, '/');
  const d = doc as { issuer?: unknown; authorization_endpoint?: unknown };
  return {
    issuer: typeof d.issuer === 'string' && d.issuer !== '' ? d.issuer : baseUrl,
    tokenEndpoint: new URL(tokenEndpoint, base).toString(),
    authorizationEndpoint:
      typeof d.authorization_endpoint === 'string' && d.authorization_endpoint !== ''
        ? new URL(d.authorization_endpoint, base).toString()
        : undefined,
  };
}
