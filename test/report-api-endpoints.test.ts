/**
 * Endpoints a hostile discovery document names, and answers undici refuses: refused at once with a clear, not
 * retried error (docs/architecture.md "Errors").
 */
import { createServer as createNetServer, type Server as NetServer } from 'node:net';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { discoverEndpoints, endpointsOf } from '../src/report-api/discovery.ts';
import { HttpTransport } from '../src/report-api/http.ts';
import { requestClientCredentialsToken } from '../src/report-api/token-request.ts';
import { EtlError } from '../src/errors.ts';
import { silentLogger } from '../src/logger.ts';

const RETRY = { attempts: 3, baseDelayMs: 1, maxDelayMs: 1 };
let doc: Record<string, unknown> = {};
let server: Server;
let base: string;
let overflow: NetServer;
let overflowUrl: string;
let http: HttpTransport;

beforeAll(async () => {
  server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(doc));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  // Answers every request with 64 KiB of headers, past undici's limit.
  overflow = createNetServer((socket) => {
    socket.on('data', () => {
      socket.end(`HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(64 * 1024)}\r\ncontent-length: 2\r\n\r\n{}`);
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => overflow.listen(0, '127.0.0.1', resolve));
  overflowUrl = `http://127.0.0.1:${(overflow.address() as { port: number }).port}`;
  http = new HttpTransport({ timeoutMs: 10_000, logger: silentLogger });
});
afterAll(async () => {
  await http.close();
  await new Promise((resolve) => server.close(resolve));
  await new Promise((resolve) => overflow.close(resolve));
});

async function failure(p: Promise<unknown>): Promise<EtlError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EtlError);
  return err as EtlError;
}

it('refuses a token endpoint that is not http(s) at once, naming it, not retryable', async () => {
  doc = { token_endpoint: 'file:///etc/passwd' };
  const err = await failure(discoverEndpoints(base, http, RETRY));
  expect(err.code).toBe('TOKEN_FAILED');
  expect(err.retryable).toBe(false);
  expect(err.message).toContain('file:///etc/passwd');
  const direct = await failure(
    requestClientCredentialsToken(
      http,
      'file:///etc/passwd',
      { clientId: 'c', clientSecret: 's', credentials: 'header' },
      RETRY,
    ),
  );
  expect([direct.code, direct.retryable]).toEqual(['TOKEN_FAILED', false]);
  expect(direct.message).toContain('file:///etc/passwd');
});

it('refuses an authorization endpoint that is not http(s)', async () => {
  doc = { token_endpoint: '/oauth/token', authorization_endpoint: 'javascript:alert(document.cookie)' };
  const err = await failure(discoverEndpoints(base, http, RETRY));
  expect([err.code, err.retryable]).toEqual(['TOKEN_FAILED', false]);
  expect(err.message).toContain('javascript:alert');
});

it('refuses a token endpoint that downgrades https to http, or on another origin unless configured', async () => {
  const downgrade = catchSync(() =>
    endpointsOf('https://erp.example.com/base', { token_endpoint: 'http://erp.example.com/base/oauth/token' }),
  );
  expect([downgrade.code, downgrade.retryable]).toEqual(['TOKEN_FAILED', false]);
  expect(downgrade.message).toContain('http://erp.example.com/base/oauth/token');
  expect(downgrade.message).toMatch(/https/);

  doc = { token_endpoint: 'http://login.example.net/oauth/token' };
  const foreign = await failure(discoverEndpoints(base, http, RETRY));
  expect([foreign.code, foreign.retryable]).toEqual(['TOKEN_FAILED', false]);
  expect(foreign.message).toContain('http://login.example.net');
  expect(foreign.message).toContain('tokenOrigin');
  const allowed = await discoverEndpoints(base, http, RETRY, undefined, 'http://login.example.net');
  expect(allowed.tokenEndpoint).toBe('http://login.example.net/oauth/token');
  doc = { token_endpoint: '/oauth/token' };
  expect((await discoverEndpoints(base, http, RETRY)).tokenEndpoint).toBe(`${base}/oauth/token`);
  // https everywhere, or an upgrade, is fine.
  expect(endpointsOf('http://erp.example.com', { token_endpoint: 'https://erp.example.com/t' }).tokenEndpoint).toBe(
    'https://erp.example.com/t',
  );
});

function catchSync(fn: () => unknown): EtlError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(EtlError);
    return err as EtlError;
  }
  throw new Error('did not throw');
}

it('answers oversized headers with a clear error kind, not INTERNAL', async () => {
  const err = await failure(http.send({ method: 'GET', url: `${overflowUrl}/api/x`, headers: {}, stage: 'poll' }));
  expect(err.code).toBe('HTTP_UNEXPECTED');
  expect(err.retryable).toBe(false);
  expect(err.message).toMatch(/headers/);
});
