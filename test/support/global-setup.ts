/**
 * Vitest global setup: the suite's PostgreSQL and Redis (docs/architecture.md "Tests"). The servers at
 * DATABASE_URL / REDIS_URL (default the local ones) when they answer; else an embedded PostgreSQL (data in
 * `.local/postgres-test`, initdb once), a `redis-server` from PATH or a redis:7 container, announced on stderr and
 * stopped after the last test file. Their URLs go into process.env before the workers start, which is where
 * test/support/env.ts and every spawned CLI or demo process read them.
 *
 * It also compiles src/ to dist/ (`tsc -p tsconfig.build.json`, what `npm run build` runs: 2-3 s) before any test,
 * and again before each rerun in watch mode: the CLI tests run bin/report-etl.js, which runs the build, as users do;
 * compiling first means an edited source is never tested through a stale build.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { ensurePostgres, ensureRedis, type LocalService } from '../../scripts/lib/local-services.ts';

const DATA_DIR = fileURLToPath(new URL('../../.local/postgres-test', import.meta.url));

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
 * Builds dist/, and makes sure PostgreSQL and Redis answer for the test files.
 * @param project vitest's project: watch mode's reruns build again first
 * @returns the teardown that stops whatever was started
 * @throws Error when the build fails; LocalServiceUnavailableError / ConfiguredServiceRefusedError (one line saying
 *   what to do) before any test runs
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  build();
  project.onTestsRerun(build);
  const started: LocalService[] = [];
  const stopAll = async () => {
    for (const service of started.reverse()) await service.stop();
  };
  try {
    // Redis first: when none can be had, nothing is started for nothing.
    const redis = await ensureRedis();
    started.push(redis);
    const postgres = await ensurePostgres({ dataDir: DATA_DIR });
    started.push(postgres);
    for (const [name, service] of [
      ['DATABASE_URL', postgres],
      ['REDIS_URL', redis],
    ] as const) {
      if (service.source === 'configured') continue;
      process.env[name] = service.url;
      process.stderr.write(`test services: ${service.line}\n`);
    }
  } catch (err) {
    await stopAll();
    throw err;
  }
  return stopAll;
}
