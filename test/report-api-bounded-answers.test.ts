/**
 * A hostile server's oversized answers: a start, poll or discovery answer is read to at most MAX_ANSWER_BYTES, then
 * refused with a clear error, rather than read whole into memory; an answer that is not JSON is named as such.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EtlError } from '../src/errors.ts';
import { MAX_ANSWER_BYTES, readJsonAnswer } from '../src/report-api/http.ts';

let server: Server;
let url: string;
let sentBytes = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    if (req.url === '/not-json') return res.end('<html>gateway</html>');
    if (req.url === '/small') return res.end('{"id":"j1","state":"Running"}');
    // An endless job answer: a string that never closes, 64 KiB at a time, until the client goes away.
    res.write('{"id":"j1","state":"Running","message":"');
    const chunk = 'x'.repeat(64 * 1024);
    const more = () => {
      while (!res.destroyed && res.write(chunk)) sentBytes += chunk.length;
      if (!res.destroyed) res.once('drain', more);
    };
    more();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

it('refuses an endless answer after MAX_ANSWER_BYTES, with a clear error, having read no further', async () => {
  const res = await request(`${url}/endless`);
  const err = await readJsonAnswer(res, 'poll', (t) => t).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(EtlError);
  expect(err).toMatchObject({ code: 'HTTP_UNEXPECTED', stage: 'poll', retryable: false });
  expect((err as Error).message).toContain(`larger than ${MAX_ANSWER_BYTES} bytes`);
  // The server could write only what the socket buffers took after the client stopped reading: far less than 64 MiB.
  expect(sentBytes).toBeLessThan(64 * 1024 * 1024);
});

it('names an answer that is not JSON, with its beginning', async () => {
  const res = await request(`${url}/not-json`);
  const err = await readJsonAnswer(res, 'start', (t) => t).catch((e: unknown) => e);
  expect(err).toMatchObject({ code: 'HTTP_UNEXPECTED', stage: 'start' });
  expect((err as Error).message).toContain('is not JSON: <html>gateway</html>');
});

it('reads a small answer as JSON', async () => {
  const res = await request(`${url}/small`);
  expect(await readJsonAnswer(res, 'poll', (t) => t)).toEqual({ id: 'j1', state: 'Running' });
});
