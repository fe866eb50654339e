/** The discovery document (docs/report-export-service.md "Endpoints" #5), read on every start. */
import { AbortedError } from '../errors.ts';
import { ServerUnreachableError, TokenError } from './errors.ts';
import { readJsonAnswer, readSnippet, retryTransient, type HttpTransport, type RetryPolicy } from './http.ts';

const DISCOVERY_PATH = '/.well-known/openid-configuration';

/** {base_url} (with or without a trailing slash, may carry a path) and an absolute path. */
export function joinUrl(baseUrl: string, path: string): string {
  return baseUrl.replace(/\/+$/, '') + path;
}

/** The endpoints report-etl uses, absolute; `issuer` is {base_url} when the document names none. */
export interface DiscoveredEndpoints {
  issuer: string;
  tokenEndpoint: string;
  authorizationEndpoint: string | undefined;
}

/**
 * Reads the discovery document, retrying transient failures; URLs are resolved against {base_url}.
 * @throws ServerUnreachableError; TokenError (not readable otherwise, or no token_endpoint); AbortedError
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
          const said = `${res.statusCode}${snippet ? `: ${snippet}` : ''}`;
          throw new TokenError(`discovery document ${DISCOVERY_PATH} answered ${said}`, { httpStatus: res.statusCode });
        }
        return readJsonAnswer(res, 'token', http.redact);
      },
      retry,
      signal,
    );
  } catch (err) {
    if (err instanceof TokenError || err instanceof ServerUnreachableError || err instanceof AbortedError) throw err;
    throw new TokenError(`discovery document ${url} could not be read: ${(err as Error).message}`, { cause: err });
  }
  const tokenEndpoint = (doc as { token_endpoint?: unknown } | null)?.token_endpoint;
  if (typeof tokenEndpoint !== 'string' || tokenEndpoint.length === 0) {
    throw new TokenError(`discovery document ${url} has no token_endpoint`);
  }
  const base = joinUrl(baseUrl, '/');
  const { issuer, authorization_endpoint: auth } = doc as { issuer?: unknown; authorization_endpoint?: unknown };
  return {
    issuer: typeof issuer === 'string' && issuer !== '' ? issuer : baseUrl,
    tokenEndpoint: new URL(tokenEndpoint, base).toString(),
    authorizationEndpoint: typeof auth === 'string' && auth !== '' ? new URL(auth, base).toString() : undefined,
  };
}
