/**
 * src/report-api/undici-core.ts loads undici's Agent and request API by file path, to spare every start the rest of
 * the package (issue 14). These must stay the objects the package's index exports, and requests through them must
 * behave as undici's own: an upgrade of undici that moves the files fails here.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as undici from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Agent, request } from '../src/report-api/undici-core.ts';

const server = createServer((req, res) => {
  let body = '';
  req.on('data', (d: Buffer) => (body += d.toString()));
  req.on('end', () => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ method: req.method, url: req.url, body, auth: req.headers.authorization ?? null }));
  });
});
let base = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

it('is the Agent the undici package exports', () => {
  expect(Agent).toBe(undici.Agent);
});

it('sends requests as undici.request does: method, path with query, headers, body; through a given Agent or its own', async () => {
  const agent = new Agent({ connections: 2 });
  try {
    const res = await request(`${base}/a/b%2Fc?x=1&y=2`, { dispatcher: agent, method: 'POST', headers: { authorization: 'Bearer t' }, body: 'hello' });
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toEqual({ method: 'POST', url: '/a/b%2Fc?x=1&y=2', body: 'hello', auth: 'Bearer t' });
    const theirs = await undici.request(`${base}/a/b%2Fc?x=1&y=2`, { dispatcher: agent, method: 'POST', headers: { authorization: 'Bearer t' }, body: 'hello' });
    expect(await theirs.body.json()).toEqual({ method: 'POST', url: '/a/b%2Fc?x=1&y=2', body: 'hello', auth: 'Bearer t' });
  } finally {
    await agent.close();
  }
  const plain = await request(`${base}/`);
  expect(await plain.body.json()).toMatchObject({ method: 'GET', url: '/' });
});

it('rejects with undici errors: a refused connection, an aborted signal', async () => {
  const refused = new URL(base);
  refused.port = '1';
  await expect(request(refused.href)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  await expect(request(`${base}/`, { signal: AbortSignal.abort(new Error('stop')) })).rejects.toThrow('stop');
});
