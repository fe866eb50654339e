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
  /**
   * The document's `code_challenge_methods_supported` (RFC 8414), which the service's document does not show
   * (docs/report-export-service.md "Discovery document"): undefined when it names none.
   */
  codeChallengeMethods: string[] | undefined;
}

/**
 * Reads the discovery document (docs/report-export-service.md "Obtaining the token endpoint": on every start): the
 * issuer and endpoints, resolved against {base_url}; transient failures are retried.
 * @param tokenOrigin the one origin besides {base_url}'s that may hold the token endpoint (jobs.yaml `tokenOrigin`)
 * @throws ServerUnreachableError (the server cannot be reached at all); TokenError (the document cannot be read
 *   otherwise, or its endpoints fail {@link endpointsOf}); AbortedError
 */
export async function discoverEndpoints(
  baseUrl: string,
  http: HttpTransport,
  retry: RetryPolicy,
  signal?: AbortSignal,
  tokenOrigin?: string,
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
  return endpointsOf(baseUrl, doc, tokenOrigin);
}

/**
 * The endpoints of a discovery document, resolved against {base_url}. Credentials go to the token endpoint, so it may
 * not point elsewhere (docs/architecture.md "Errors"): http(s), never from https to http, and {base_url}'s origin
 * (upgraded to https is fine) or `tokenOrigin`.
 * @throws TokenError, not retryable, naming the endpoint
 */
export function endpointsOf(baseUrl: string, doc: unknown, tokenOrigin?: string): DiscoveredEndpoints {
  const d = (doc ?? {}) as {
    issuer?: unknown;
    token_endpoint?: unknown;
    authorization_endpoint?: unknown;
    code_challenge_methods_supported?: unknown;
  };
  if (typeof d.token_endpoint !== 'string' || d.token_endpoint.length === 0) {
    throw new TokenError(`discovery document ${joinUrl(baseUrl, DISCOVERY_PATH)} has no token_endpoint`);
  }
  const base = new URL(joinUrl(baseUrl, '/'));
  const refuse = (field: string, url: string, why: string): never => {
    throw new TokenError(`the discovery document's ${field} ${url} is refused: ${why}`, { retryable: false });
  };
  const resolve = (field: string, value: string): URL => {
    let url: URL;
    try {
      url = new URL(value, base);
    } catch {
      return refuse(field, JSON.stringify(value), 'it is no URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') refuse(field, url.href, 'only http(s) URLs are used');
    return url;
  };
  const token = resolve('token_endpoint', d.token_endpoint);
  if (base.protocol === 'https:' && token.protocol === 'http:') {
    refuse('token_endpoint', token.href, `baseUrl is https, and the credentials are not sent over plain http`);
  }
  const upgraded = token.protocol === 'https:' && token.hostname === base.hostname;
  if (token.origin !== base.origin && !upgraded && token.origin !== tokenOrigin) {
    refuse(
      'token_endpoint',
      token.href,
      `it is not on ${base.origin}; if ${token.origin} is the connection's login server, ` +
        `set tokenOrigin: ${token.origin} on the connection in jobs.yaml`,
    );
  }
  const auth = d.authorization_endpoint;
  const methods = d.code_challenge_methods_supported;
  return {
    issuer: typeof d.issuer === 'string' && d.issuer !== '' ? d.issuer : baseUrl,
    tokenEndpoint: token.toString(),
    authorizationEndpoint:
      typeof auth === 'string' && auth !== '' ? resolve('authorization_endpoint', auth).toString() : undefined,
    codeChallengeMethods: Array.isArray(methods)
      ? methods.filter((m): m is string => typeof m === 'string').slice(0, 20)
      : undefined,
  };
}
