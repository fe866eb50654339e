/**
 * The long-running service and the queue commands as users start them: jobs.yaml changed and broken
 * while the scheduler and worker run; `enqueue`, `runs`, `replay`, `backfill` through the CLI; `worker` as a
 * process stopped by SIGTERM.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { main } from '../src/cli/main.ts';
import { startService } from '../src/app/service.ts';
import { DATABASE_URL, REDIS_URL, uniqueName } from './support/env.ts';
import { startHarness, type Harness } from './support/harness.ts';
import { attemptsOf, captureLogger, deleteKeys, deleteRuns, waitFor } from './support/queue-env.ts';

let h: Harness;
let prefix: string;
let jp: string;
let dir: string;
let path: string;

beforeAll(async () => {
  h = await startHarness({ jobDurationMs: 30 });
  prefix = uniqueName('qv');
  jp = uniqueName('jv');
  dir = mkdtempSync(join(tmpdir(), 'report-etl-queue-'));
  path = join(dir, 'jobs.yaml');
  process.env.QV_SIM_URL = h.sim.url;
  process.env.QV_SECRET = 'demo-secret';
});
afterAll(async () => {
  await deleteKeys(h.redis, prefix);
  await deleteRuns(h.pool, jp);
  rmSync(dir, { recursive: true, force: true });
  await h?.close();
});

/** A jobs.yaml with the given jobs (name -> extra YAML lines under the job). */
function writeJobs(jobs: Record<string, string>, extraTop = ''): void {
  const lines = [
    'connections:',
    '  sim:',
    '    baseUrl: ${QV_SIM_URL}',
    '    clientId: demo-client',
    '    clientSecret: ${QV_SECRET}',
    '    timezone: UTC',
    '    pollIntervalMs: 20',
    '    pollMaxIntervalMs: 50',
    extraTop,
    'jobs:',
  ];
  for (const [name, extra] of Object.entries(jobs)) {
    lines.push(
      `  ${name}:`,
      '    connection: sim',
      '    report: { mandant: 7777, name: Stock/Levels, paging: 100 }',
      `    target: { table: ${h.schema}.${name.replace(/[^a-z0-9_]/g, '_')} }`,
      ...extra
        .split('\n')
        .filter(Boolean)
        .map((l) => `    ${l}`),
    );
  }
  writeFileSync(path, `${lines.join('\n')}\n`);
}

/** Runs the CLI in this process; returns exit code and output lines. */
async function cli(...args: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const o = vi
    .spyOn(process.stdout, 'write')
    .mockImplementation((chunk) => (out.push(...String(chunk).split('\n').filter(Boolean)), true));
  const e = vi
    .spyOn(process.stderr, 'write')
    .mockImplementation((chunk) => (err.push(...String(chunk).split('\n').filter(Boolean)), true));
  try {
    const code = await main(['node', 'report-etl', ...args]);
    return { code, out, err: err.filter((l) => !l.startsWith('{')) };
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
}

it('jobs.yaml changed and broken while scheduler and worker run', async () => {
  const a = `${jp}_a`;
  const b = `${jp}_b`;
  writeJobs({ [a]: 'schedule: "*/2 * * * * *"' });
  const { logger, lines } = captureLogger();
  const service = await startService({
    configPath: path,
    logger,
    scheduler: true,
    worker: true,
    prefix,
    graceMs: 5_000,
  });
  try {
    await waitFor('a ran', async () => (await attemptsOf(h.pool, a)).some((r) => r.status === 'succeeded'));
    // A valid change: a removed, b added.
    writeJobs({ [b]: 'schedule: "*/2 * * * * *"' });
    await waitFor('b scheduled', () => service.scheduler!.scheduled()[b] !== undefined);
    expect(Object.keys(service.scheduler!.scheduled())).toEqual([b]);
    await waitFor('b ran', async () => (await attemptsOf(h.pool, b)).some((r) => r.status === 'succeeded'));
    const aRuns = (await attemptsOf(h.pool, a)).length;
    // A change that breaks b (isolation of invalid jobs): b is left out with every problem logged; c, valid, runs.
    const c = `${jp}_c`;
    writeJobs({ [b]: 'schedule: "61 * * * *"\nretries: 3', [c]: 'schedule: "*/2 * * * * *"' });
    const logged = await waitFor('problems logged', () => lines.find((l) => Array.isArray(l.problems)));
    const problems = logged.problems as string[];
    expect(logged.job).toBe(b);
    expect(problems.some((p) => p.includes(`jobs.${b}.schedule`) && p.includes('invalid cron expression'))).toBe(true);
    expect(problems.some((p) => p.includes('unknown key "retries"'))).toBe(true);
    expect(String(logged.msg)).toContain(`(job "${b}" is skipped; 1 more problem`);
    await waitFor(
      'c scheduled, b not',
      () => JSON.stringify(service.scheduler!.scheduled()) === JSON.stringify({ [c]: '*/2 * * * * *@UTC' }),
    );
    await waitFor('c runs', async () => (await attemptsOf(h.pool, c)).some((r) => r.status === 'succeeded'));
    expect((await attemptsOf(h.pool, a)).length).toBe(aRuns);
    // A file that cannot be parsed at all: logged, the running config kept.
    writeFileSync(path, 'jobs: [unclosed');
    const unparseable = await waitFor('unparseable file logged', () =>
      lines.find((l) => String(l.msg).includes('keeping the running config')),
    );
    expect(String(unparseable.msg)).toContain('YAML syntax error');
    expect(service.scheduler!.scheduled()).toEqual({ [c]: '*/2 * * * * *@UTC' });
  } finally {
    await service.stop();
  }
  expect(lines.some((l) => l.msg === 'worker stopped')).toBe(true);
});

it('enqueue, runs, replay and backfill from the command line', async () => {
  const job = `${jp}_cli`;
  writeJobs({ [job]: 'schedule: "0 6 * * *"\ncatchup: none' });
  const enq = await cli('enqueue', job, '--config', path, '--queue-prefix', prefix, '--param', 'ROWS=7');
  expect(enq.code).toBe(0);
  const jobId = /queued as (\S+)/.exec(enq.out.join('\n'))![1]!;
  expect(jobId.startsWith(`${job}__manual_`)).toBe(true);
  const { logger } = captureLogger();
  const service = await startService({ configPath: path, logger, worker: true, prefix });
  try {
    await waitFor('manual run done', async () => (await attemptsOf(h.pool, job)).some((r) => r.status === 'succeeded'));
    const attempts = await attemptsOf(h.pool, job);
    expect(Number(attempts[0]!.rows)).toBe(7);
    // One line per run, by run key, with its attempt count ...
    const table = await cli('runs', '--job', job, '--since', '1h');
    expect(table.code).toBe(0);
    expect(table.out[0]).toMatch(/^run key\s+job\s+status\s+attempts\s+trigger\s+started\s+duration\s+rows\s+error$/);
    expect(table.out[1]).toMatch(
      new RegExp(`^${attempts[0]!.run_key}\\s+${job}\\s+succeeded\\s+1\\s+manual\\s.*\\s7$`),
    );
    // ... or one per attempt, by attempt id, with its run key and number.
    const attemptTable = await cli('runs', '--attempts', '--job', job);
    expect(attemptTable.out[0]).toMatch(
      new RegExp(
        '^attempt id\\s+job\\s+run key\\s+attempt\\s+status\\s+trigger\\s+started\\s+duration\\s+rows\\s+' +
          'interval\\s+request sent\\s+error$',
      ),
    );
    expect(attemptTable.out[1]).toMatch(
      new RegExp(`^${attempts[0]!.attempt_id}\\s+${job}\\s+${attempts[0]!.run_key}\\s+1\\s+succeeded\\s+manual\\s`),
    );
    expect((await cli('runs', '--job', job, '--status', 'failed')).out).toEqual(['no runs']);
    expect((await cli('runs', '--attempts', '--job', job, '--status', 'failed')).out).toEqual(['no attempts']);
    const bad = await cli('replay', '00000000-0000-4000-8000-000000000000', '--config', path, '--queue-prefix', prefix);
    expect(bad.code).toBe(2);
    expect(bad.err.join('\n')).toContain(
      'no run with run key "00000000-0000-4000-8000-000000000000" and no attempt with that id',
    );
    expect((await cli('replay', '--failed', '--job', job, '--config', path, '--queue-prefix', prefix)).out).toEqual([
      '0 failed runs queued again',
    ]);
    const bf = await cli(
      'backfill',
      job,
      '--from',
      '2026-01-01',
      '--to',
      '2026-01-03',
      '--config',
      path,
      '--queue-prefix',
      prefix,
    );
    expect(bf.code).toBe(0);
    expect(bf.out).toEqual([
      `2026-01-01 06:00:00Z  ${job}__20260101T060000Z  queued`,
      `2026-01-02 06:00:00Z  ${job}__20260102T060000Z  queued`,
      `${job}: 2 of 2 runs queued`,
    ]);
    await waitFor(
      'backfilled runs done',
      async () =>
        (await attemptsOf(h.pool, job)).filter((r) => r.trigger === 'backfill' && r.status === 'succeeded').length ===
        2,
    );
  } finally {
    await service.stop();
  }
});

it('`report-etl worker` stops on SIGTERM with exit code 0', async () => {
  writeJobs({ [`${jp}_proc`]: '' });
  const child = spawn(
    process.execPath,
    ['bin/report-etl.js', 'worker', '--config', path, '--queue-prefix', prefix, '--grace', '1'],
    {
      env: { ...process.env, DATABASE_URL, REDIS_URL, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await waitFor('worker running', () => out.includes('running'));
  child.kill('SIGTERM');
  expect(await exit).toBe(0);
  expect(out).toContain('report-etl stopped');
});
