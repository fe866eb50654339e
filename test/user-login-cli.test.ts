/**
 * `report-etl login` and `validate` as a user runs them: the interactive login that waits for the admin
 * server's callback, `--print-url` then `--redirected-url` (and its replay refused, exit 1), invalid_scope (exit 1
 * with the server's words), 26 scopes refused by `validate` (exit 2, citing the service's description), the localhost
 * warning and a missing REPORT_ETL_SECRET_KEY (exit 2). The refresh token never appears in the output.
 */
import { spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AdminServer } from '../src/admin/server.ts';
import { validateConfigText } from '../src/config/load.ts';
import { makeQueue, type RunQueue } from '../src/queue/queue.ts';
import { SECRET_KEY_ENV } from '../src/secret-box.ts';
import { DATABASE_URL, REDIS_URL, testPrefix } from './support/env.ts';
import { startHarness, type Harness } from './support/harness.ts';
import { loginOnSimulator } from './support/user-login.ts';
import { adminServerOf } from './support/admin-login.ts';

const BIN = fileURLToPath(new URL('../bin/report-etl.js', import.meta.url));
const KEY = randomBytes(32).toString('hex');
let h: Harness;
let admin: AdminServer;
let queue: RunQueue;
let dir: string;
let configPath: string;
const previousKey = process.env[SECRET_KEY_ENV];

beforeAll(async () => {
  h = await startHarness();
  queue = makeQueue(h.redis, testPrefix('ulcq'));
  dir = await mkdtemp(join(tmpdir(), 'report-etl-login-'));
  configPath = join(dir, 'jobs.yaml');
  const yaml = (redirectUri: string) => `connections:
  erp_user:
    baseUrl: ${h.sim.url}
    auth: authorization_code
    clientId: demo-user-client
    scopes: [svc.pad, offline_access]
    redirectUri: ${redirectUri}
    timezone: Europe/Zurich
  nina_scopes:
    baseUrl: ${h.sim.url}
    auth: authorization_code
    clientId: demo-trusted-user-client
    clientSecret: \${TRUSTED_SECRET}
    scopes: [svc.pad]
    redirectUri: https://etl.example.com/oauth/callback
jobs: {}
`;
  process.env[SECRET_KEY_ENV] = KEY;
  process.env.TRUSTED_SECRET = 'demo-trusted-secret';
  const config = validateConfigText(yaml('http://127.0.0.1:1/oauth/callback'), 'jobs.yaml');
  admin = await adminServerOf(h, queue, {
    logger: (await import('../src/logger.ts')).silentLogger,
    auth: { token: 'x' },
    connections: () => config.connections,
  });
  config.connections.erp_user!.redirectUri = `${admin.url}/oauth/callback`;
  await writeFile(configPath, yaml(`${admin.url}/oauth/callback`));
});

afterAll(async () => {
  await admin?.close();
  await queue?.close();
  await h?.pool.query('DELETE FROM etl.connection_logins WHERE base_url = $1', [h?.sim.url]);
  await h?.pool.query('DELETE FROM etl.login_states WHERE base_url = $1', [h?.sim.url]);
  await h?.close();
  if (previousKey === undefined) delete process.env[SECRET_KEY_ENV];
  else process.env[SECRET_KEY_ENV] = previousKey;
});

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(
  args: string[],
  env: Record<string, string | undefined> = {},
  onStdout?: (text: string, stdin: Writable) => void,
): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: {
        ...process.env,
        DATABASE_URL,
        REDIS_URL,
        [SECRET_KEY_ENV]: KEY,
        TRUSTED_SECRET: 'demo-trusted-secret',
        LOG_LEVEL: 'debug',
        ...env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
      onStdout?.(stdout, child.stdin!);
    });
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const outputs: string[] = [];

it('waits for the admin callback: prints the URL, the browser logs in, the command exits 0', async () => {
  let started = false;
  const res = await cli(['login', 'erp_user', '-c', configPath], {}, (text) => {
    const url = /^(http\S+)$/m.exec(text)?.[1];
    if (!url || started) return;
    started = true;
    void loginOnSimulator(url, 'anna', 'anna-password').then((redirect) => fetch(redirect, { redirect: 'manual' }));
  });
  outputs.push(res.stdout, res.stderr);
  expect(res.stderr).toContain('Open this URL in a browser');
  expect(res.code).toBe(0);
  expect(res.stdout).toMatch(
    new RegExp(
      'connection "erp_user" logged in; scopes granted: svc\\.pad offline_access; the refresh token lasts until ' +
        '\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\+0[12]:00 at the latest',
    ),
  );
}, 90_000);

it('a pasted line that is no URL is explained, and the URL pasted next logs in', async () => {
  let pasted = false;
  const res = await cli(['login', 'erp_user', '-c', configPath], {}, (text, stdin) => {
    const url = /^(http\S+)$/m.exec(text)?.[1];
    if (!url || pasted) return;
    pasted = true;
    stdin.write('code=abc but not a URL\n');
    void loginOnSimulator(url, 'anna', 'anna-password').then((redirect) => stdin.write(`${redirect}\n`));
  });
  outputs.push(res.stdout, res.stderr);
  expect(res.stderr).toContain('the pasted line: "code=abc but not a URL" is not a URL');
  expect(res.stderr).toContain('still waiting');
  expect(res.code).toBe(0);
  expect(res.stdout).toMatch(/erp_user: logged in; scopes granted: svc\.pad offline_access/);
}, 90_000);

it(
  '--print-url then --redirected-url logs in without the callback; ' + 'a replayed URL is refused with exit 1',
  async () => {
    const printed = await cli(['login', 'erp_user', '-c', configPath, '--print-url']);
    expect(printed.code).toBe(0);
    const url = printed.stdout.trim();
    expect(new URL(url).searchParams.get('response_type')).toBe('code');
    expect(new URL(url).searchParams.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const redirect = await loginOnSimulator(url, 'anna', 'anna-password');
    const done = await cli(['login', 'erp_user', '-c', configPath, '--redirected-url', redirect]);
    outputs.push(printed.stdout, printed.stderr, done.stdout, done.stderr);
    expect(done.code).toBe(0);
    // A time as every command prints one: in the connection's zone with its offset (docs/operations.md "Times").
    expect(done.stdout).toMatch(
      new RegExp(
        'erp_user: logged in; scopes granted: svc\\.pad offline_access; the refresh token lasts until ' +
          '\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\+0[12]:00 at the latest',
      ),
    );
    const again = await cli(['login', 'erp_user', '-c', configPath, '--redirected-url', redirect]);
    outputs.push(again.stdout, again.stderr);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(
      'login failed (LOGIN_FAILED): this login link is unknown, was used already or expired',
    );
  },
  90_000,
);

it(
  "ends with exit 1 and the server's words on invalid_scope (a trusted client, " + 'a user without the scope)',
  async () => {
    const printed = await cli(['login', 'nina_scopes', '-c', configPath, '--print-url']);
    const redirect = await loginOnSimulator(printed.stdout.trim(), 'nina', 'nina-password');
    const res = await cli(['login', 'nina_scopes', '-c', configPath, '--redirected-url', redirect]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(
      'the server refused the login: invalid_scope (The user has no access to any of the requested scopes); ' +
        'assign the requested scopes to the user',
    );
  },
  90_000,
);

it(
  "validate refuses 26 scopes citing the service's limit, warns about localhost, " +
    'and login needs REPORT_ETL_SECRET_KEY',
  async () => {
    const bad = join(dir, 'bad.yaml');
    const scopes = Array.from({ length: 26 }, (_, i) => `s${i}`).join(', ');
    await writeFile(
      bad,
      `connections:\n  u:\n    baseUrl: ${h.sim.url}\n    auth: authorization_code\n    clientId: ` +
        `demo-user-client\n    scopes: [${scopes}]\n    redirectUri: https://etl.example.com/cb\njobs: {}\n`,
    );
    const res = await cli(['validate', '-c', bad]);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(
      'connections.u.scopes: at most 25 scopes per authorization request (docs/report-export-service.md "Limits"',
    );

    const local = join(dir, 'local.yaml');
    await writeFile(
      local,
      `connections:\n  u:\n    baseUrl: ${h.sim.url}\n    auth: authorization_code\n    clientId: ` +
        `demo-user-client\n    scopes: [svc.pad]\n    redirectUri: http://localhost:3000/oauth/callback\njobs: {}\n`,
    );
    const warned = await cli(['validate', '-c', local]);
    expect(warned.code).toBe(0);
    expect(warned.stderr).toContain('warning: ');
    expect(warned.stderr).toContain('localhost is generally not possible');

    const noKey = await cli(['validate', '-c', local], { [SECRET_KEY_ENV]: '' });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('REPORT_ETL_SECRET_KEY is not set');
    // The path names the field once: `connections.u.auth: authorization_code keeps …`.
    expect(noKey.stderr).toContain('connections.u.auth: authorization_code keeps the refresh token encrypted');
    const loginNoKey = await cli(['login', 'u', '-c', local], { [SECRET_KEY_ENV]: '' });
    expect(loginNoKey.code).toBe(2);
    expect(loginNoKey.stderr).toContain('REPORT_ETL_SECRET_KEY is not set');
  },
  90_000,
);

it('never prints a refresh token', () => {
  const issued = h.sim.oauthCounters().refreshTokensIssued;
  expect(issued.length).toBeGreaterThanOrEqual(2);
  for (const t of issued) for (const o of outputs) expect(o.includes(t)).toBe(false);
});
