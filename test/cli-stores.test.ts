/**
 * The command line when PostgreSQL or Redis is not there:
 * every command says in one line what it could not reach (URL without password, error code) and what to do, and
 * exits 2 — within seconds, also for Redis, which ioredis would otherwise retry forever. And the read-only `runs`
 * never migrates: on a fresh database it creates no `etl` schema.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DATABASE_URL, REDIS_URL, uniqueName } from './support/env.ts';

const BIN = fileURLToPath(new URL('../bin/report-etl.js', import.meta.url));

let dir: string;
let configPath: string;
let closedPort: number;

/** A TCP port nothing listens on: bound by the OS, then closed again. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  closedPort = await freePort();
  dir = await mkdtemp(join(tmpdir(), 'report-etl-stores-'));
  configPath = join(dir, 'jobs.yaml');
  // A valid jobs.yaml: the commands must get as far as opening the stores.
  await writeFile(
    configPath,
    `connections:
  sim:
    baseUrl: http://127.0.0.1:9
    clientId: demo-client
    clientSecret: \${STORES_SECRET:-demo-secret}
jobs:
  orders:
    connection: sim
    schedule: "0 6 * * *"
    report: { mandant: 7777, name: Sales/Orders }
    target: { table: public.orders_never_loaded }
`,
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI as a user would, with `env` over the test's; kills it after 45 s so a hang fails the test. */
function cli(args: string[], env: Record<string, string>): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, DATABASE_URL, REDIS_URL, LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const killer = setTimeout(() => child.kill('SIGKILL'), 45_000);
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The stderr lines, expecting exactly one: no stack, no JSON log lines. */
function oneLine(r: Exit): string {
  const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
  expect(lines, r.stderr).toHaveLength(1);
  expect(r.stderr).not.toMatch(/^\s+at /m);
  return lines[0]!;
}

it(
  'a database that does not answer: ' + 'one line naming DATABASE_URL (no password), the code and what to do; exit 2',
  async () => {
    const url = `postgres://etl_user:s3cret-pw@127.0.0.1:${closedPort}/warehouse`;
    for (const args of [
      ['runs'],
      ['run', 'orders', '--config', configPath],
      ['migrate'],
      ['replay', '--failed', '--config', configPath],
      ['worker', '--config', configPath],
    ]) {
      const r = await cli(args, { DATABASE_URL: url });
      const what = `report-etl ${args[0]}`;
      expect(r.code, `${what}: ${r.stderr}`).toBe(2);
      const line = oneLine(r);
      expect(line, what).toContain(`PostgreSQL at 127.0.0.1:${closedPort}/warehouse`);
      expect(line, what).toContain('DATABASE_URL');
      expect(line, what).toContain('ECONNREFUSED');
      expect(line, what).toMatch(/start PostgreSQL/);
      expect(line, what).not.toContain('s3cret-pw');
      expect(r.stdout, what).toBe('');
    }
  },
);

it('a Redis that does not answer: one line naming REDIS_URL (no password), not endless retries; exit 2', async () => {
  const url = `redis://:r3dis-pw@127.0.0.1:${closedPort}`;
  for (const args of [
    ['enqueue', 'orders', '--config', configPath],
    [
      'backfill',
      'orders',
      '--from',
      '2026-01-01',
      '--to',
      '2026-01-02',
      '--config',
      configPath,
      '--queue-prefix',
      uniqueName('qs'),
    ],
  ]) {
    const r = await cli(args, { REDIS_URL: url });
    const what = `report-etl ${args[0]}`;
    expect(r.code, `${what}: ${r.stderr}`).toBe(2);
    const line = oneLine(r);
    expect(line, what).toContain(`Redis at 127.0.0.1:${closedPort}`);
    expect(line, what).toContain('REDIS_URL');
    expect(line, what).toContain('ECONNREFUSED');
    expect(line, what).toMatch(/start Redis/);
    expect(line, what).not.toContain('r3dis-pw');
  }
});

it('`runs` on a fresh database reads, never migrates: no etl schema appears', async () => {
  const dbName = uniqueName('fresh');
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  admin.on('error', () => undefined);
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  try {
    const url = new URL(DATABASE_URL);
    url.pathname = `/${dbName}`;
    const r = await cli(['runs'], { DATABASE_URL: url.toString() });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('no runs\n');
    // Says why there is nothing, in one line, so that a wrong DATABASE_URL is noticed.
    expect(oneLine(r)).toMatch(/no run history .*etl.*report-etl migrate/);
    const fresh = new pg.Client({ connectionString: url.toString() });
    await fresh.connect();
    try {
      const { rows } = await fresh.query(`SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = 'etl'`);
      expect(rows[0].n).toBe(0);
    } finally {
      await fresh.end();
    }
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
  }
});

/** Runs `fn` with a fresh database and a role made by `roleSql` (`CREATE ROLE <name> …`), dropped afterwards. */
async function withRole(roleSql: string, fn: (url: string, role: string, db: string) => Promise<void>): Promise<void> {
  const db = uniqueName('privs');
  const role = uniqueName('etl_role');
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  admin.on('error', () => undefined);
  await admin.connect();
  await admin.query(`CREATE DATABASE ${db}`);
  await admin.query(`CREATE ROLE ${role} LOGIN ${roleSql}`);
  try {
    const url = new URL(DATABASE_URL);
    url.pathname = `/${db}`;
    url.username = role;
    url.password = '';
    await fn(url.toString(), role, db);
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
    await admin.query(`DROP ROLE IF EXISTS ${role}`);
    await admin.end();
  }
}

it('a full PostgreSQL (53300) is said to be full, not down: one line, what to do, exit 2', async () => {
  await withRole('CONNECTION LIMIT 0', async (url) => {
    for (const args of [['enqueue', 'orders', '--config', configPath], ['migrate']]) {
      const r = await cli(args, { DATABASE_URL: url });
      const what = `report-etl ${args[0]}`;
      expect(r.code, `${what}: ${r.stderr}`).toBe(2);
      const line = oneLine(r);
      expect(line, what).toContain('53300');
      expect(line, what).toMatch(/is running but full/);
      expect(line, what).toMatch(/max_connections|CONNECTION LIMIT/);
      expect(line, what).not.toMatch(/start PostgreSQL/);
    }
  });
});

it('`migrate` without CREATE on the database names the privilege and the GRANT in one line; exit 2', async () => {
  await withRole('', async (url, role, db) => {
    const r = await cli(['migrate'], { DATABASE_URL: url });
    expect(r.code, r.stderr).toBe(2);
    const line = oneLine(r);
    expect(line).toContain('42501');
    expect(line).toContain(`GRANT CREATE ON DATABASE ${db} TO ${role}`);
  });
});
