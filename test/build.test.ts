/**
 * The one build (`npm run build`, what `npm ci`, the Docker image and `npx report-etl` run): the sources compile
 * with tsc to JavaScript in a directory of its own, and that build runs the same command line, resolves
 * package.json and the migrations, validates the sample config, and runs jobs end to end: a txt report, an Excel
 * workbook loaded as rows, and a queued run taken by the build's worker, stopped by SIGTERM with exit code 0.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { promisify } from 'node:util';
import { rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DATABASE_URL, REDIS_URL, uniqueName } from './support/env.ts';
import { waitFor } from './support/queue-env.ts';
import { startHarness, type Harness } from './support/harness.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
// Same depth as dist/ so that ../package.json and ../migrations resolve as they do in the image.
const OUT = '.build-test';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  rmSync(`${ROOT}/${OUT}`, { recursive: true, force: true });
  await h?.close();
});

it('compiles, and the build runs the command line and real jobs', async () => {
  const tsc = spawnSync('node_modules/.bin/tsc', ['-p', 'tsconfig.build.json', '--outDir', OUT], { cwd: ROOT, encoding: 'utf8' });
  expect(tsc.status, tsc.stdout + tsc.stderr).toBe(0);
  const run = (...args: string[]) =>
    spawnSync(process.execPath, ['--max-semi-space-size=1', `${OUT}/main.js`, ...args], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, LOG_LEVEL: 'warn', DATABASE_URL, REDIS_URL, BUILD_TEST_SECRET: 'demo-secret' },
    });
  const version = run('--version');
  expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  const help = run('--help');
  for (const command of ['run', 'validate', 'migrate', 'scheduler', 'worker', 'admin', 'start', 'enqueue', 'runs', 'replay', 'backfill', 'simulate']) {
    expect(help.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
  }
  const validate = run('validate', '--config', 'jobs.yaml');
  expect(validate.status, validate.stderr).toBe(0);
  expect(validate.stdout).toMatch(/jobs\.yaml: ok, \d+ jobs/);
  const migrate = run('migrate');
  expect(migrate.status, migrate.stderr).toBe(0);
  expect(migrate.stdout).toMatch(/database is up to date|applied migrations/);

  const config = `${ROOT}/${OUT}/jobs.yaml`;
  const queued = uniqueName('build_queued');
  writeFileSync(
    config,
    `connections:
  sim: { baseUrl: "${h.sim.url}", clientId: demo-client, clientSecret: "\${BUILD_TEST_SECRET}", timezone: Europe/Zurich, pollIntervalMs: 20, productVersion: 2026 }
jobs:
  orders:
    connection: sim
    report: { mandant: 7777, name: Sales/Orders, outputType: txt, paging: 200, parameters: { ROWS: "450" } }
    target: { table: ${h.schema}.orders, mode: replace }
  workbook:
    connection: sim
    report: { mandant: 7777, name: Sales/Orders, outputType: excel-xlsx_data, paging: 30, parameters: { ROWS: "75" } }
    target: { table: ${h.schema}.workbook, load: rows }
  ${queued}:
    connection: sim
    report: { mandant: 7777, name: Stock/Levels, outputType: json, paging: 100 }
    target: { table: ${h.schema}.queued, mode: replace }
`,
  );
  // Not spawnSync: the simulator answers from this process.
  const runJob = (job: string) =>
    promisify(execFile)(process.execPath, ['--max-semi-space-size=1', `${OUT}/main.js`, 'run', job, '--config', config], {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: 'warn', DATABASE_URL, REDIS_URL, BUILD_TEST_SECRET: 'demo-secret' },
    });
  expect((await runJob('orders')).stdout).toMatch(/^orders: succeeded, 450 rows, 3 pages/);
  expect((await runJob('workbook')).stdout).toMatch(/^workbook: succeeded, 75 rows, 3 pages/);
  const counts = await h.pool.query<{ orders: string; workbook: string }>(`SELECT (SELECT count(*) FROM ${h.schema}.orders) AS orders, (SELECT count(*) FROM ${h.schema}.workbook) AS workbook`);
  expect(counts.rows[0]).toEqual({ orders: '450', workbook: '75' });

  // The queue from the build: enqueue, then its worker takes the run.
  const queueEnv = { ...process.env, LOG_LEVEL: 'warn', DATABASE_URL, REDIS_URL, BUILD_TEST_SECRET: 'demo-secret', REPORT_ETL_QUEUE_PREFIX: uniqueName('buildq') };
  await promisify(execFile)(process.execPath, [`${OUT}/main.js`, 'enqueue', queued, '--config', config], { cwd: ROOT, env: queueEnv });
  const worker = spawn(process.execPath, [`${OUT}/main.js`, 'worker', '--config', config], { cwd: ROOT, env: queueEnv, stdio: 'ignore' });
  try {
    await waitFor(
      'the build\'s worker ran the queued job',
      async () => (await h.pool.query<{ status: string }>('SELECT status FROM etl.attempts WHERE job = $1', [queued])).rows[0]?.status === 'succeeded',
      60_000,
    );
  } finally {
    const exited = once(worker, 'exit');
    worker.kill('SIGTERM');
    // A worker stops on SIGTERM after its runs (graceful shutdown), with exit code 0.
    expect((await exited)[0]).toBe(0);
  }
}, 180_000);
