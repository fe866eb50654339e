/**
 * Vitest global setup: the suite's PostgreSQL and Redis (docs/architecture.md "Tests"). The servers at
 * DATABASE_URL / REDIS_URL (default the local ones) when they answer; else an embedded PostgreSQL (data in
 * `.local/postgres-test`, initdb once), a `redis-server` from PATH or a redis:7 container, announced on stderr and
 * stopped after the last test file. The tests work in a database of their own on that server, `<name>_test` beside
 * the `<name>` DATABASE_URL names (made when missing, announced on the first line); that one is never written, which
 * the teardown checks against a snapshot taken before the first file. The URLs go into process.env before the
 * workers start, which is where every spawned CLI or demo process reads them; so does the queue prefix
 * {@link TEST_QUEUE_PREFIX} of every command a test spawns without one of its own, whose keys the teardown deletes:
 * the suite never writes into the keys of an installation on the same Redis.
 *
 * It also compiles src/ to dist/ (`tsc -p tsconfig.build.json`, what `npm run build` runs: 2-3 s) before any test,
 * and again before each rerun in watch mode: the CLI tests run bin/report-etl.js, which runs the build, as users do;
 * compiling first means an edited source is never tested through a stale build.
 */
import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { DEFAULT_QUEUE_PREFIX } from '../../src/queue/names.ts';
import { ensurePostgres, ensureRedis, type LocalService } from '../../scripts/lib/local-services.ts';
import { DEFAULT_DATABASE_URL } from '../../src/app/connections.ts';
import { hostPort } from '../../scripts/lib/service-probes.ts';
import {
  databaseName,
  ensureDatabase,
  snapshotChanges,
  snapshotDatabase,
  testDatabaseUrl,
  type DatabaseSnapshot,
} from './test-database.ts';

const DATA_DIR = fileURLToPath(new URL('../../.local/postgres-test', import.meta.url));

/**
 * The queue prefix (`REPORT_ETL_QUEUE_PREFIX`) of the commands the tests spawn without one of their own: the given
 * one's (default `report-etl`) with `-test`, as the database's name gets `_test`. Two suites on one Redis with
 * prefixes of their own never share it, so that one's teardown never deletes the keys of another still running.
 */
const TEST_QUEUE_PREFIX = `${process.env.REPORT_ETL_QUEUE_PREFIX || DEFAULT_QUEUE_PREFIX}-test`;

/** Deletes the keys under {@link TEST_QUEUE_PREFIX} from the Redis at `url`. */
async function deleteTestKeys(url: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${TEST_QUEUE_PREFIX}:*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/**
 * Compiles src/ to dist/ as `npm run build` does.
 * @throws Error with tsc's messages when it fails (a type error too: `npm ci` would refuse that build)
 */
function build(): void {
  const tsc = spawnSync(
    process.execPath,
    [
      fileURLToPath(new URL('../../node_modules/@typescript/native/bin/tsc', import.meta.url)),
      '-p',
      'tsconfig.build.json',
    ],
    {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      encoding: 'utf8',
    },
  );
  if (tsc.status !== 0)
    throw new Error(
      `the build failed (tsc -p tsconfig.build.json), so the CLI tests cannot run it:\n${tsc.stdout}${tsc.stderr}`,
    );
}

/**
 * Builds dist/, makes sure PostgreSQL and Redis answer for the test files, and makes the suite's database.
 * @param project vitest's project: watch mode's reruns build again first
 * @returns the teardown: checks that the database DATABASE_URL names was not written, stops whatever was started
 * @throws Error when the build fails or the test database cannot be made; LocalServiceUnavailableError /
 *   ConfiguredServiceRefusedError (one line saying what to do) before any test runs
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const named = databaseName(process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL);
  build();
  project.onTestsRerun(build);
  const started: LocalService[] = [];
  const stopAll = async () => {
    for (const service of started.reverse()) await service.stop();
  };
  let original: { url: string; snapshot: DatabaseSnapshot };
  let redisUrl: string;
  try {
    // Redis first: when none can be had, nothing is started for nothing.
    const redis = await ensureRedis();
    started.push(redis);
    redisUrl = redis.url;
    const postgres = await ensurePostgres({ dataDir: DATA_DIR });
    started.push(postgres);
    if (redis.source !== 'configured') process.env.REDIS_URL = redis.url;
    process.env.REPORT_ETL_QUEUE_PREFIX = TEST_QUEUE_PREFIX;
    for (const service of [postgres, redis])
      if (service.source !== 'configured') process.stderr.write(`test services: ${service.line}\n`);
    // An embedded PostgreSQL's URL names its `postgres`; the test database keeps the name DATABASE_URL gave.
    const url = new URL(postgres.url);
    url.pathname = `/${encodeURIComponent(named)}`;
    const testUrl = testDatabaseUrl(url.toString());
    await ensureDatabase(postgres.url, testUrl);
    original = { url: postgres.url, snapshot: await snapshotDatabase(postgres.url) };
    process.env.DATABASE_URL = testUrl;
    project.provide('testDatabaseUrl', testUrl);
    project.provide('originalDatabase', original);
    process.stdout.write(
      `test database: ${databaseName(testUrl)} on ${hostPort(testUrl, 5432)} ` +
        `(DATABASE_URL names ${named}; that one is left untouched)\n`,
    );
  } catch (err) {
    await stopAll();
    throw err;
  }
  return async () => {
    try {
      const changes = snapshotChanges(original.snapshot, await snapshotDatabase(original.url));
      if (changes.length) {
        // vitest reports an error thrown here but still exits 0.
        process.exitCode = 1;
        process.stderr.write(
          `FAIL the database DATABASE_URL names (${databaseName(original.url)}) changed while the suite ran; ` +
            `the tests must write only into ${databaseName(process.env.DATABASE_URL!)}:\n  ` +
            `${changes.slice(0, 20).join('\n  ')}${changes.length > 20 ? `\n  … ${changes.length - 20} more` : ''}\n`,
        );
      }
      await deleteTestKeys(redisUrl).catch((err: unknown) =>
        process.stderr.write(`could not delete the suite's keys (${TEST_QUEUE_PREFIX}:*): ${String(err)}\n`),
      );
    } finally {
      await stopAll();
    }
  };
}
