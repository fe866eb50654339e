/**
 * The one build as a user gets it, in a copy of the project's files (package.json, bin/, scripts/, src/, the two
 * tsconfigs, migrations/, jobs.yaml; node_modules linked): bin/report-etl.js first says the build is missing, then a
 * fresh `npm run build` compiles dist/, and the bin runs it: --version, --help, validate, migrate, a txt report and an
 * Excel workbook over real HTTP, and a queued run taken by the build's worker, stopped by SIGTERM with exit code 0.
 * Then `prepare` (what `npm ci` runs): a source that does not compile fails it and leaves no dist/main.js, so the bin
 * says the build is missing instead of running a half-built one; without src/ (the Docker image's dependency stages)
 * or without TypeScript (`npm ci --omit=dev`) it builds nothing and succeeds.
 *
 * A copy, so that this build never rewrites the dist/ that the other test files' CLI processes run. The bin is started
 * as its shebang says (this Node.js, NODE_FLAGS), not through npx: npx outside an installed package installs that
 * directory into npm's own cache first.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LONG_RUNNING_FLAGS, NODE_FLAGS } from '../src/runtime-flags.ts';
import { DATABASE_URL, REDIS_URL, uniqueName } from './support/env.ts';
import { deleteKeys, deleteRuns, waitFor } from './support/queue-env.ts';
import { startHarness, type Harness } from './support/harness.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MISSING =
  'report-etl: the build is missing (dist/main.js): run `npm run build` (`npm ci` also builds it), or run the ' +
  'sources with `npm run dev -- <args>`\n';
const jobs = uniqueName('build');
const queuePrefix = uniqueName('buildq');

/** A fresh directory holding `entries` copied from the project, and node_modules linked unless `modules` is false. */
function copyOfProject(entries: readonly string[], modules = true): string {
  const dir = mkdtempSync(join(tmpdir(), 'report-etl-build-'));
  for (const entry of entries) cpSync(join(ROOT, entry), join(dir, entry), { recursive: true });
  if (modules) symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return dir;
}

let h: Harness;
let project: string;
const env = () => ({
  ...process.env,
  LOG_LEVEL: 'warn',
  DATABASE_URL,
  REDIS_URL,
  BUILD_TEST_SECRET: 'demo-secret',
  REPORT_ETL_QUEUE_PREFIX: queuePrefix,
});
/** `report-etl <args>` in the copy, to its end; asynchronous, as the simulator answers from this process. */
const bin = async (...args: string[]) => {
  const child = spawn(process.execPath, [...NODE_FLAGS, join(project, 'bin/report-etl.js'), ...args], {
    cwd: project,
    env: env(),
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const [status] = (await once(child, 'close')) as [number | null];
  return { status, stdout, stderr };
};

beforeAll(async () => {
  h = await startHarness();
  project = copyOfProject([
    'package.json',
    'bin',
    'scripts',
    'src',
    'tsconfig.json',
    'tsconfig.build.json',
    'migrations',
    'jobs.yaml',
  ]);
});
afterAll(async () => {
  if (project) rmSync(project, { recursive: true, force: true });
  if (h) {
    await deleteKeys(h.redis, queuePrefix);
    await deleteRuns(h.pool, jobs);
    await h.close();
  }
});

describe('the one build, in a copy of the project', () => {
  it(
    'without a build the bin says how to make one; ' +
      '`npm run build` makes it, and it runs the command line and real jobs',
    async () => {
      const before = await bin('--version');
      expect(before.stderr).toBe(MISSING);
      expect(before.status).toBe(2);

      const build = spawnSync('npm', ['run', 'build'], { cwd: project, encoding: 'utf8', env: process.env });
      expect(build.status, build.stdout + build.stderr).toBe(0);
      expect(existsSync(join(project, 'dist/main.js'))).toBe(true);

      const version = await bin('--version');
      expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
      const help = await bin('--help');
      for (const command of [
        'run',
        'validate',
        'migrate',
        'scheduler',
        'worker',
        'admin',
        'start',
        'enqueue',
        'runs',
        'replay',
        'backfill',
        'simulate',
      ]) {
        expect(help.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
      }
      const validate = await bin('validate', '--config', 'jobs.yaml');
      expect(validate.status, validate.stderr).toBe(0);
      expect(validate.stdout).toMatch(/jobs\.yaml: ok, \d+ jobs/);
      const migrate = await bin('migrate');
      expect(migrate.status, migrate.stderr).toBe(0);
      expect(migrate.stdout).toMatch(/database is up to date|applied migrations/);

      const config = join(project, 'build-test.yaml');
      writeFileSync(
        config,
        `connections:
  sim: { baseUrl: "${h.sim.url}", clientId: demo-client, clientSecret: "\${BUILD_TEST_SECRET}",
    timezone: Europe/Zurich, pollIntervalMs: 20, productVersion: 2026 }
jobs:
  ${jobs}_orders:
    connection: sim
    report: { mandant: 7777, name: Sales/Orders, outputType: txt, paging: 200, parameters: { ROWS: "450" } }
    target: { table: ${h.schema}.orders, mode: replace }
  ${jobs}_workbook:
    connection: sim
    report: { mandant: 7777, name: Sales/Orders, outputType: excel-xlsx_data, paging: 30, parameters: { ROWS: "75" } }
    target: { table: ${h.schema}.workbook, load: rows }
  ${jobs}_queued:
    connection: sim
    report: { mandant: 7777, name: Stock/Levels, outputType: json, paging: 100 }
    target: { table: ${h.schema}.queued, mode: replace }
`,
      );
      const orders = await bin('run', `${jobs}_orders`, '--config', config);
      expect(orders.status, orders.stderr).toBe(0);
      expect(orders.stdout).toMatch(new RegExp(`^${jobs}_orders: succeeded, 450 rows, 3 pages`));
      const workbook = await bin('run', `${jobs}_workbook`, '--config', config);
      expect(workbook.status, workbook.stderr).toBe(0);
      expect(workbook.stdout).toMatch(new RegExp(`^${jobs}_workbook: succeeded, 75 rows, 3 pages`));
      const counts = await h.pool.query<{ orders: string; workbook: string }>(
        `SELECT (SELECT count(*) FROM ${h.schema}.orders) AS orders, ` +
          `(SELECT count(*) FROM ${h.schema}.workbook) AS workbook`,
      );
      expect(counts.rows[0]).toEqual({ orders: '450', workbook: '75' });

      // The queue from the build: enqueue, then its worker takes the run.
      const enqueue = await bin('enqueue', `${jobs}_queued`, '--config', config);
      expect(enqueue.status, enqueue.stderr).toBe(0);
      const worker = spawn(
        process.execPath,
        [...NODE_FLAGS, join(project, 'bin/report-etl.js'), 'worker', '--config', config],
        { cwd: project, env: env(), stdio: 'ignore' },
      );
      const exited = once(worker, 'exit');
      try {
        await waitFor(
          "the build's worker ran the queued job",
          async () =>
            (
              await h.pool.query<{ status: string }>('SELECT status FROM etl.attempts WHERE job = $1', [
                `${jobs}_queued`,
              ])
            ).rows[0]?.status === 'succeeded',
          60_000,
        );
        // The worker restarted itself with the long-running flags, in the process that was spawned (same pid).
        expect(readFileSync(`/proc/${worker.pid}/cmdline`, 'utf8').split('\0')).toEqual(
          expect.arrayContaining([...NODE_FLAGS, ...LONG_RUNNING_FLAGS, 'worker']),
        );
      } finally {
        worker.kill('SIGTERM');
      }
      // A worker stops on SIGTERM after its runs (graceful shutdown), with exit code 0.
      expect((await exited)[0]).toBe(0);
    },
    180_000,
  );

  it(
    'prepare (npm ci) fails on a source that does not ' + 'compile and removes dist/main.js; the bin then says so',
    async () => {
      appendFileSync(join(project, 'src/main.ts'), "\nexport const broken: number = 'not a number';\n");
      const prepare = await promisify(execFile)(process.execPath, ['scripts/prepare-build.js'], { cwd: project }).then(
        () => undefined,
        (err: { code: number; stdout: string; stderr: string }) => err,
      );
      expect(prepare?.code).toBe(1);
      expect(prepare?.stdout + (prepare?.stderr ?? '')).toMatch(/src\/main\.ts.*TS2322/);
      expect(prepare?.stderr).toContain(
        'report-etl prepare: `tsc -p tsconfig.build.json` failed (above); dist/main.js removed',
      );
      expect(existsSync(join(project, 'dist/main.js'))).toBe(false);
      const after = await bin('--version');
      expect(after.stderr).toBe(MISSING);
      expect(after.status).toBe(2);
    },
    120_000,
  );
});

describe('prepare where there is nothing to build', () => {
  it.each([
    ["without src/, as in the Docker image's dependency stages", ['package.json', 'scripts'], true, 'no src/'],
    [
      'without TypeScript, as after `npm ci --omit=dev`',
      ['package.json', 'scripts', 'src', 'tsconfig.json', 'tsconfig.build.json'],
      false,
      'no TypeScript installed',
    ],
  ] as const)('%s: builds nothing, says why, exit 0', (_, entries, modules, why) => {
    const dir = copyOfProject(entries, modules);
    try {
      const r = spawnSync(process.execPath, ['scripts/prepare-build.js'], { cwd: dir, encoding: 'utf8' });
      expect(r.stderr).toBe('');
      expect(r.stdout).toBe(`report-etl prepare: not building dist/ (${why})\n`);
      expect(r.status).toBe(0);
      expect(existsSync(join(dir, 'dist'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
