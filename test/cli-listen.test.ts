/**
 * A server command whose port is taken (or whose host is no address of this machine) ends with one line saying
 * where, why and which option or variable moves it, exit 2, instead of Node's `listen EADDRINUSE` and a stack
 * (README "Commands"; src/listen-error.ts). The demo names its own variables.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runCli } from './support/cli.ts';
import { DATABASE_URL, REDIS_URL, testPrefix } from './support/env.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** A port this test holds, so that nothing else can listen there. */
let taken: Server;
let port: number;

beforeAll(async () => {
  taken = createServer();
  await new Promise<void>((resolve, reject) => {
    taken.once('error', reject);
    taken.listen(0, '127.0.0.1', resolve);
  });
  port = (taken.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((resolve) => taken.close(resolve));
});

/** The stderr lines that are not npm's or Node's warnings. */
function ownLines(stderr: string): string[] {
  return stderr.split('\n').filter((l) => l.trim() !== '' && !/^\(node:\d+\)|EBADENGINE|WARN|"level"/.test(l));
}

it('admin and simulate on a taken port say so in one line and exit 2', async () => {
  const env = { REPORT_ETL_QUEUE_PREFIX: testPrefix('listen'), LOG_FORMAT: 'json' };
  const admin = await runCli(['admin', '--port', String(port)], { env });
  expect(admin.code).toBe(2);
  expect(ownLines(admin.stderr)).toEqual([
    `report-etl: cannot listen on 127.0.0.1:${port}: the port is in use: stop what listens there, or choose ` +
      'another port (--port N, or ADMIN_PORT)',
  ]);
  const sim = await runCli(['simulate', '--port', String(port)], { env });
  expect(sim.code).toBe(2);
  expect(ownLines(sim.stderr)).toEqual([
    `report-etl: cannot listen on 127.0.0.1:${port}: the port is in use: stop what listens there, or choose ` +
      'another port (--port N)',
  ]);
  expect(admin.stderr + sim.stderr).not.toMatch(/\n\s+at /);
});

it('the demo whose admin port is taken names ADMIN_PORT', async () => {
  const free = createServer();
  await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
  const simPort = (free.address() as { port: number }).port;
  await new Promise((resolve) => free.close(resolve));
  const result = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ['scripts/demo.ts', '--once'], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL,
        REDIS_URL,
        REPORT_BASE_URL: `http://127.0.0.1:${simPort}`,
        ADMIN_PORT: String(port),
        REPORT_ETL_QUEUE_PREFIX: testPrefix('listen-demo'),
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
  expect(result.code).toBe(2);
  expect(result.stderr).toContain(
    `demo: cannot listen on 127.0.0.1:${port}: the port is in use: stop what listens there, or choose another ` +
      'port (ADMIN_PORT=<free port> for the demo)',
  );
});
