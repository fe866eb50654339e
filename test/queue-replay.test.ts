/**
 * `report-etl replay --failed` as on-call staff use it: a failure whose job later succeeded in a newer
 * logical run into the same replace target is superseded — replaying it would put older data over newer — so it
 * is skipped and reported with the reason, unless `--include-superseded`; an append failure is never superseded;
 * `--dry-run` lists what would be queued and queues nothing. Real runs against the simulator, the real queue.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { failAttempt } from '../src/history/attempts.ts';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { lines, runCli, simConnectionLines } from './support/cli.ts';
import { uniqueName } from './support/env.ts';
import { attemptsOf, insertTestAttempt, useQueueBench } from './support/queue-env.ts';

const prefix = uniqueName('qr');
const jp = uniqueName('jr');
const { h, queue } = useQueueBench(prefix, jp, { jobDurationMs: 30 });
let dir: string;
let path: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'report-etl-replay-'));
  path = join(dir, 'jobs.yaml');
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
});

/** jobs.yaml with the given jobs: name -> [report name, write mode]. */
function writeJobs(jobs: Record<string, [string, 'replace' | 'append']>): void {
  const lines = [...simConnectionLines(h.sim.url, 'QR_SECRET', { pollIntervalMs: 20 })];
  for (const [name, [report, mode]] of Object.entries(jobs)) {
    lines.push(
      `  ${name}:`,
      '    connection: sim',
      `    report: { mandant: 7777, name: ${report}, paging: 100, parameters: { ROWS: "5" } }`,
      `    target: { table: ${h.schema}.${name}, mode: ${mode} }`,
    );
  }
  writeFileSync(path, `${lines.join('\n')}\n`);
}

/** Runs the CLI as a user would; returns exit code, stdout lines and stderr. */
async function cli(...args: string[]): Promise<{ code: number | null; out: string[]; err: string }> {
  const r = await runCli([...args, '--config', path], { env: { QR_SECRET: 'demo-secret', LOG_LEVEL: 'warn' } });
  return { code: r.code, out: lines(r.stdout), err: r.stderr };
}

/** The queue jobs of this file's queue (any state). */
async function queued(): Promise<{ id: string; runKey: string; trigger: string }[]> {
  const jobs = await queue.getJobs(['waiting', 'delayed', 'active', 'completed', 'failed', 'prioritized']);
  return jobs.map((j) => ({ id: j.id!, runKey: j.data.runKey, trigger: j.data.trigger }));
}

it(
  'replay --failed skips failures a later successful run superseded, says why, ' + 'and --dry-run queues nothing',
  async () => {
    const rep = `${jp}_rep`;
    const app = `${jp}_app`;
    const only = `${jp}_only`;
    // Monday: every report fails on the server.
    writeJobs({ [rep]: ['Failing', 'replace'], [app]: ['Failing', 'append'], [only]: ['Failing', 'replace'] });
    for (const job of [rep, app, only]) expect((await cli('run', job, '--run-key', 'monday')).code).toBe(1);
    // Tuesday: the report works again; rep and app load a newer logical run.
    writeJobs({
      [rep]: ['Stock/Levels', 'replace'],
      [app]: ['Stock/Levels', 'append'],
      [only]: ['Failing', 'replace'],
    });
    for (const job of [rep, app]) expect((await cli('run', job, '--run-key', 'tuesday')).code).toBe(0);
    const failedRep = (await attemptsOf(h.pool, rep)).find((r) => r.status === 'failed')!;
    const failedApp = (await attemptsOf(h.pool, app)).find((r) => r.status === 'failed')!;
    const failedOnly = (await attemptsOf(h.pool, only)).find((r) => r.status === 'failed')!;

    // The superseded failure is skipped, with the reason; the queue stays empty.
    const realRep = await cli('replay', '--failed', '--job', rep, '--queue-prefix', prefix);
    expect(realRep.code, realRep.err).toBe(0);
    expect(realRep.out[0]).toBe('0 failed runs queued again');
    expect(realRep.out[1]).toMatch(/^skipped 1 superseded failed run/);
    expect(await queued()).toEqual([]);

    // Dry run: the replace failure is superseded by tuesday, listed as skipped; nothing reaches the queue.
    const dryRep = await cli('replay', '--failed', '--job', rep, '--dry-run', '--queue-prefix', prefix);
    expect(dryRep.code, dryRep.err).toBe(0);
    expect(dryRep.out[0]).toBe('dry run, nothing queued: would queue 0 failed runs');
    expect(dryRep.out[1]).toMatch(
      /^skipped 1 superseded failed run: a later logical run of the same job succeeded .*--include-superseded/,
    );
    expect(dryRep.out[3]).toContain(failedRep.attempt_id);
    expect(dryRep.out[3]).toContain('[superseded by tuesday]');

    // Dry run of a failure nothing superseded: run key, job, the failed attempt, its start and the server's first error
    // line.
    const dryOnly = await cli('replay', '--failed', '--job', only, '--dry-run', '--queue-prefix', prefix);
    expect(dryOnly.out[0]).toBe('dry run, nothing queued: would queue 1 failed run:');
    expect(dryOnly.out[1]).toMatch(/^\s+run key\s+job\s+failed attempt\s+started\s+error$/);
    const row = dryOnly.out[2]!;
    expect(row).toContain(failedOnly.attempt_id);
    expect(row).toContain(only);
    expect(row).toContain('monday');
    expect(row).toContain(failedOnly.started_at.toISOString().replace('T', ' ').slice(0, 19));
    // The server's first meaningful line, whole: its heading and the line it introduces, not our prefix.
    expect(row).toContain("Report execution failed: Division by zero in formula 'Marge'");
    expect(row).not.toContain('report job');
    // An append failure is not superseded: tuesday's rows are not monday's.
    const dryApp = await cli('replay', '--failed', '--job', app, '--dry-run', '--queue-prefix', prefix);
    expect(dryApp.out[0]).toBe('dry run, nothing queued: would queue 1 failed run:');
    expect(dryApp.out[2]).toContain(failedApp.attempt_id);
    expect(await queued()).toEqual([]);

    // The others are queued as the same logical run.
    for (const job of [only, app])
      expect((await cli('replay', '--failed', '--job', job, '--queue-prefix', prefix)).out.at(-1)).toBe(
        '1 failed run queued again',
      );
    expect((await queued()).map((q) => `${q.runKey}:${q.trigger}`).sort()).toEqual(['monday:replay', 'monday:replay']);

    // --include-superseded replays it anyway.
    const forced = await cli('replay', '--failed', '--job', rep, '--include-superseded', '--queue-prefix', prefix);
    expect(forced.out).toEqual([
      `replay queued as monday__replay_${failedRep.attempt_id}`,
      '1 failed run queued again',
    ]);
    expect((await queue.getJob(`monday__replay_${failedRep.attempt_id}`))?.data).toMatchObject({
      job: rep,
      runKey: 'monday',
      trigger: 'replay',
    });

    // One run by its run key, or by an attempt id, and the command says which it got. Three jobs have a run
    // "monday": the run key alone is ambiguous.
    const ambiguous = await cli('replay', 'monday', '--queue-prefix', prefix);
    expect(ambiguous.code).toBe(2);
    // Other test files running beside this one may have a run "monday" too: this file's three jobs must be named.
    const several = /run key "monday" is a run of several jobs \(([^)]*)\): say which with --job/.exec(ambiguous.err);
    expect(several?.[1]?.split(', ')).toEqual(expect.arrayContaining([app, only, rep]));
    const byKey = await cli('replay', 'monday', '--job', only, '--queue-prefix', prefix);
    expect(byKey.code, byKey.err).toBe(0);
    expect(byKey.out).toEqual([
      `run monday of job ${only}: replay of the run queued as monday__replay_${failedOnly.attempt_id}, ` +
        `after its failed attempt ${failedOnly.attempt_id}`,
    ]);
    const byAttempt = await cli('replay', failedApp.attempt_id, '--queue-prefix', prefix);
    expect(byAttempt.out).toEqual([
      `attempt ${failedApp.attempt_id} (attempt 1 of run monday of job ${app}): replay of the run queued as ` +
        `monday__replay_${failedApp.attempt_id}`,
    ]);
    // The same replays as --failed queued: nothing new reached the queue.
    expect((await queued()).filter((q) => q.trigger === 'replay')).toHaveLength(3);
    const succeeded = await cli('replay', 'tuesday', '--job', rep, '--queue-prefix', prefix);
    expect(succeeded.code).toBe(2);
    expect(succeeded.err).toContain(`run tuesday of job ${rep} succeeded: nothing to replay`);
    const unknown = await cli('replay', 'wednesday', '--queue-prefix', prefix);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('no run with run key "wednesday" and no attempt with that id');
  },
  180_000,
);

it(
  'refuses at once to replay a run of a job that left jobs.yaml, ' + 'and --failed skips such runs saying why',
  async () => {
    const gone = `${jp}_gone`;
    writeJobs({ [`${jp}_kept`]: ['Stock/Levels', 'replace'] });
    const attemptId = randomUUID();
    await insertTestAttempt(h.pool, { attemptId, job: gone, runKey: 'tuesday', worker: 'test:1' });
    await failAttempt(h.pool, attemptId, {
      status: 'failed',
      stage: 'poll',
      errorKind: 'REPORT_FAILED',
      retryable: false,
      message: 'Report execution failed:',
    });
    const before = (await queued()).length;
    const one = await cli('replay', 'tuesday', '--job', gone, '--queue-prefix', prefix);
    expect(one.code).toBe(2);
    expect(one.err).toContain(
      `run tuesday of job ${gone} cannot be replayed: job ${gone} is no longer in jobs.yaml ` +
        `(add it back to replay its runs)`,
    );
    const all = await cli('replay', '--failed', '--job', gone, '--queue-prefix', prefix);
    expect(all.code).toBe(0);
    expect(all.out).toContain(
      'skipped 1 failed run of jobs no longer in jobs.yaml (add a job back to replay its runs):',
    );
    expect(all.out[0]).toBe('0 failed runs queued again');
    expect((await queued()).length).toBe(before);
  },
);
