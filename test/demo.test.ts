/**
 * `npm run demo` as a newcomer runs it (not interactive, so it exits after the first round): simulator, scheduler,
 * worker and admin server come up, every sample job ends as expected within the round, and it says where to look.
 * On a machine where no PostgreSQL or Redis answers it starts its own, says so, and stops them.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { DATABASE_URL, REDIS_URL, uniqueName } from './support/env.ts';
import { portAcceptsConnections } from '../scripts/lib/service-probes.ts';
import { deleteKeys } from './support/queue-env.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DEMO_DATA_DIR = fileURLToPath(new URL('../.local/postgres-demo-test', import.meta.url));

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

interface DemoResult {
  code: number | null;
  stdout: string;
  stderr: string;
  adminPort: number;
  /** The queue prefix the demo was given. */
  prefix: string;
}

/**
 * Runs `scripts/demo.ts --once` with DATABASE_URL / REDIS_URL as given and free ports for simulator and admin; an
 * embedded PostgreSQL it starts keeps its data in `.local/postgres-demo-test`, not in the user's `.local/postgres`.
 */
async function runDemo(databaseUrl: string, redisUrl: string): Promise<DemoResult> {
  const [simPort, adminPort] = [await freePort(), await freePort()];
  const prefix = uniqueName('demo');
  return new Promise<DemoResult>((resolve, reject) => {
    const child = spawn(process.execPath, ['scripts/demo.ts', '--once'], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        REDIS_URL: redisUrl,
        REPORT_BASE_URL: `http://127.0.0.1:${simPort}`,
        ADMIN_PORT: String(adminPort),
        REPORT_ETL_QUEUE_PREFIX: prefix,
        DEMO_POSTGRES_DATA_DIR: DEMO_DATA_DIR,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, adminPort, prefix }));
  });
}

/**
 * The round's table and hints, as every demo run must print them. Not in a terminal the demo ends after the round:
 * its hints name only what outlives it (nothing, when it started its own PostgreSQL and Redis).
 */
function expectRoundDone(result: DemoResult, startedStores = false): void {
  expect(result.stderr).not.toContain('demo-secret');
  expect(result.code, result.stdout + result.stderr).toBe(0);
  for (const job of ['sales_orders', 'stock_levels', 'ledger', 'orders_compact']) {
    expect(result.stdout).toMatch(new RegExp(`^${job} +[a-z_]+ +[a-z]+ +succeeded +[1-9]\\d*`, 'm'));
  }
  // The failing job is labelled before it runs, and in the table, with its output type and write mode.
  const label = result.stdout.indexOf('on purpose    broken_report fails:');
  expect(label).toBeGreaterThan(-1);
  expect(label).toBeLessThan(result.stdout.indexOf('queued        one run of each job'));
  expect(result.stdout).toMatch(/^job +output +mode +status +rows +pages +seconds +error$/m);
  expect(result.stdout).toMatch(/^broken_report +json +replace +failed \(on purpose\) .*Report execution failed/m);
  expect(result.stdout).toMatch(/^sales_orders +json +replace +succeeded /m);
  // Not in a terminal either, the log lines are readable, not JSON.
  expect(result.stderr).not.toMatch(/^\{"level"/m);
  expect(result.stdout).toContain(`http://127.0.0.1:${result.adminPort}/admin/runs`);
  expect(result.stdout).toContain('Where to look, now that the demo has ended:');
  if (startedStores) {
    expect(result.stdout).toContain(
      'the PostgreSQL and Redis the demo started are gone with it, and so are the admin pages',
    );
  } else {
    expect(result.stdout).toMatch(/^ {2}loaded rows +psql /m);
    expect(result.stdout).toContain('report-etl runs');
    // The commands it suggests, in another terminal, reach what the demo used: its database, Redis and queue prefix
    // were given to the demo alone.
    expect(result.stdout).toMatch(
      new RegExp(
        `^ {2}the commands above need:\n {16}export DATABASE_URL=\\S+ (REDIS_URL=\\S+ )?` +
          `REPORT_ETL_QUEUE_PREFIX=${result.prefix}$`,
        'm',
      ),
    );
  }
}

it('loads every sample report, shows the failing one, prints where to look, and exits 0', async () => {
  const result = await runDemo(DATABASE_URL, REDIS_URL);
  // Its queue's keys, under a prefix of this run's: the suite leaves nothing in the Redis it was given.
  const redis = new Redis(REDIS_URL);
  await deleteKeys(redis, result.prefix).finally(() => redis.disconnect());
  expectRoundDone(result);
  expect(result.stdout).toContain(`postgres      using PostgreSQL at ${new URL(DATABASE_URL).host}`);
  expect(result.stdout).toContain(`redis         using Redis at ${new URL(REDIS_URL).host}`);
  expect(result.stdout).not.toContain('stopped ');
}, 120_000);

it(
  'with no PostgreSQL and no Redis answering, starts embedded PostgreSQL and redis-server, ' +
    'says so, runs the round, and stops them',
  async () => {
    const [pgClosed, redisClosed] = [await freePort(), await freePort()];
    const result = await runDemo(
      `postgres://postgres@127.0.0.1:${pgClosed}/postgres`,
      `redis://127.0.0.1:${redisClosed}`,
    );
    expectRoundDone(result, true);
    const pgLine = new RegExp(
      /^postgres +started embedded PostgreSQL [\d.]+ at 127\.0\.0\.1:(\d+) in [\d.]+ s.*data /.source +
        /in (?:\.local\/postgres-demo-test|\/\S*report-etl-embedded-postgres\/data-[0-9a-f]{12}) /.source +
        /.*nothing answered at 127\.0\.0\.1:(\d+)/.source,
      'm',
    ).exec(result.stdout);
    const redisLine = new RegExp(
      /^redis +started \S*redis-server at 127\.0\.0\.1:(\d+) in [\d.]+ s \(nothing answered at /.source +
        /127\.0\.0\.1:(\d+)/.source,
      'm',
    ).exec(result.stdout);
    expect(pgLine?.[2], result.stdout).toBe(String(pgClosed));
    expect(redisLine?.[2], result.stdout).toBe(String(redisClosed));
    expect(result.stdout).toMatch(/^stopped +embedded PostgreSQL, redis-server$/m);
    expect(await portAcceptsConnections(Number(pgLine![1]))).toBe(false);
    expect(await portAcceptsConnections(Number(redisLine![1]))).toBe(false);
    // No process of the two is left (the demo prints no pids: find them by their ports).
    const processes = execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' }).split('\n');
    expect(
      processes.filter((l) => l.includes(`-p ${pgLine![1]} `) || l.includes(`redis-server 127.0.0.1:${redisLine![1]}`)),
    ).toEqual([]);
  },
  120_000,
);
