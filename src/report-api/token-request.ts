/**
 * The client credentials grant (docs/report-export-service.md "Client credentials grant", "Token response"). Errors
 * carry the HTTP status and the OAuth `error`, never the secret or the token.
 */
import { AbortedError } from '../errors.ts';
import { boundText, formatBytes, redactor } from '../failure-text.ts';
import { ServerUnreachableError, TokenError } from './errors.ts';
import { credentialSecrets, readBounded, retryTransient, type HttpTransport, type RetryPolicy } from './http.ts';
import type { CredentialsWay } from './report-rules.ts';

/** A freshly issued access token: its lifetime (expires_in) and the response's space-separated scope, if any. */
export interface IssuedToken {
  accessToken: string;
  expiresInSeconds: number;
  scope?: string;
}

/** The most a token answer (a token or an OAuth error) may hold, in bytes (docs/architecture.md "Limits"). */
export const MAX_TOKEN_ANSWER_BYTES = 64 * 1024;
/** The longest access token taken, in bytes: it is kept in Redis and sent with every report call. */
const MAX_ACCESS_TOKEN_BYTES = 8 * 1024;

/** `token`, checked for its size. @throws TokenError (not retryable) naming its size when it is too long */
export function checkedAccessToken(token: string, path: string): string {
  const size = Buffer.byteLength(token);
  if (size > MAX_ACCESS_TOKEN_BYTES) {
    throw new TokenError(
      `token endpoint ${path} answered an access token of ${formatBytes(size)}, ` +
        `more than the ${MAX_ACCESS_TOKEN_BYTES} bytes taken: it was not used or stored`,
      { httpStatus: 200 },
    );
  }
  return token;
}

/**
 * POSTs grant_type=client_credentials to the token endpoint, the credentials in the Authorization header or the
 * form body; transient failures are retried per `retry`.
 * @returns the access token and its lifetime in seconds
 * @throws TokenError with httpStatus and oauthError (non-200 answer, unusable body, attempts exhausted, an endpoint
 *   that is not http(s)); ServerUnreachableError; AbortedError
 */
export async function requestClientCredentialsToken(
  http: HttpTransport,
  tokenEndpoint: string,
  creds: { clientId: string; clientSecret: string; credentials: CredentialsWay },
  retry: RetryPolicy,
  signal?: AbortSignal,
): Promise<IssuedToken> {
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json',
  };
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  if (creds.credentials === 'body') {
    form.set('client_id', creds.clientId);
    form.set('client_secret', creds.clientSecret);
  } else {
    const basic = Buffer.from(`${creds.clientId}:${creds.clientSecret}`, 'utf8').toString('base64');
    headers.authorization = `Basic ${basic}`;
  }
  const body = form.toString();
  const url = new URL(tokenEndpoint);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TokenError(`token endpoint ${url.href} is refused: only http(s) URLs are used`, { retryable: false });
  }
  const path = url.pathname;
  const redact = redactor(credentialSecrets(creds.clientId, creds.clientSecret));

  try {
    return await retryTransient(
      async () => {
        const res = await http.send({ method: 'POST', url: tokenEndpoint, headers, body, signal, stage: 'token' });
        const { bytes, more } = await readBounded(res, MAX_TOKEN_ANSWER_BYTES);
        let json: Record<string, unknown> | undefined;
        try {
          const parsed: unknown = JSON.parse(bytes.toString('utf8'));
          if (parsed !== null && typeof parsed === 'object') json = parsed as Record<string, unknown>;
        } catch {
          json = undefined;
        }
        const tooLarge = more > 0 ? ` with more than ${MAX_TOKEN_ANSWER_BYTES} bytes, not read further` : '';
        if (res.statusCode !== 200) {
          const oauthError = typeof json?.error === 'string' ? boundText(redact(json.error), 100) : undefined;
          const description = typeof json?.error_description === 'string' ? redact(json.error_description) : undefined;
          throw new TokenError(
            `token endpoint ${path} answered ${res.statusCode}${tooLarge} for client "${creds.clientId}"` +
              (oauthError ? `: ${oauthError}` : '') +
              (description ? ` (${description})` : ''),
            { httpStatus: res.statusCode, oauthError },
          );
        }
        const accessToken = json?.access_token;
        const expiresIn = json?.expires_in;
        if (
          typeof accessToken !== 'string' ||
          accessToken === '' ||
          typeof expiresIn !== 'number' ||
          !(expiresIn > 0)
        ) {
          // The body may hold a token: name the problem, never echo the body.
          throw new TokenError(
            `token endpoint ${path} answered 200${tooLarge || ' without a usable access_token and expires_in'}`,
            { httpStatus: 200 },
          );
        }
        checkedAccessToken(accessToken, path);
        return {
          accessToken,
          expiresInSeconds: expiresIn,
          ...(typeof json?.scope === 'string' ? { scope: boundText(redact(json.scope)) } : {}),
        };
      },
      retry,
      signal,
    );
  } catch (err) {
    if (err instanceof TokenError || err instanceof ServerUnreachableError || err instanceof AbortedError) throw err;
    throw new TokenError(`token endpoint ${path} could not be reached: ${(err as Error).message}`, { cause: err });
  }
}
