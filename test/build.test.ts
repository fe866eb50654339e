/**
 * The compiled product (`npm run build`, what the Docker image runs): the sources compile to JavaScript that runs
 * the same command line, resolves package.json and the migrations, and validates the sample config.
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
// Same depth as dist/ so that ../package.json and ../../migrations resolve as they do in the image.
const OUT = '.build-test';

afterAll(() => rmSync(`${ROOT}/${OUT}`, { recursive: true, force: true }));

it('compiles, and the compiled entry runs the command line', () => {
  const tsc = spawnSync('node_modules/.bin/tsc', ['-p', 'tsconfig.build.json', '--outDir', OUT], { cwd: ROOT, encoding: 'utf8' });
  expect(tsc.status, tsc.stdout + tsc.stderr).toBe(0);
  const run = (...args: string[]) => spawnSync(process.execPath, ['--max-semi-space-size=1', `${OUT}/main.js`, ...args], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, LOG_LEVEL: 'warn' } });
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
}, 60_000);
