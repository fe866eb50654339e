/**
 * `report-etl backfill` of a period that already ran: the ticks are printed in the job's time zone with
 * their offset besides UTC; a second backfill says the ticks are already done (BullMQ keeps their ids for 7 days)
 * and suggests --force instead of silently queueing nothing; `--force` runs every tick again as a new logical run
 * with the tick's logical time — for an append target, its rows are appended again. Real worker, simulator, queue.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startService } from '../src/app/service.ts';
import { formatWithOffset } from '../src/pipeline/logical-time.ts';
import { lines, runCli, simConnectionLines } from './support/cli.ts';
import { uniqueName } from './support/env.ts';
import { attemptsOf, captureLogger, useQueueBench, waitFor } from './support/queue-env.ts';

const prefix = uniqueName('qb');
const jp = uniqueName('jb');
const { h, queue } = useQueueBench(prefix, jp, { jobDurationMs: 30 });
let dir: string;
let path: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'report-etl-backfill-'));
  path = join(dir, 'jobs.yaml');
  // The in-process worker reads the same jobs.yaml as the CLI children.
  process.env.QB_SECRET = 'demo-secret';
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
});

/** Runs the CLI as a user would; returns exit code, stdout lines and stderr. */
async function cli(...args: string[]): Promise<{ code: number | null; out: string[]; err: string }> {
  const r = await runCli([...args, '--config', path, '--queue-prefix', prefix], {
    env: { QB_SECRET: 'demo-secret', LOG_LEVEL: 'warn' },
  });
  return { code: r.code, out: lines(r.stdout), err: r.stderr };
}

it('prints ticks in the job zone with offset', () => {
  expect(formatWithOffset(new Date('2026-01-02T05:00:00Z'), 'Europe/Zurich')).toBe('2026-01-02 06:00:00+01:00');
  expect(formatWithOffset(new Date('2026-07-02T04:00:00Z'), 'Europe/Zurich')).toBe('2026-07-02 06:00:00+02:00');
  expect(formatWithOffset(new Date('2026-07-02T04:00:00Z'), 'America/St_Johns')).toBe('2026-07-02 01:30:00-02:30');
});

it(
  'backfill of a period already done says so and suggests --force; ' +
    '--force runs each tick again as a new logical run',
  async () => {
    const job = `${jp}_app`;
    const table = `${h.schema}.${job}`;
    writeFileSync(
      path,
      [
        ...simConnectionLines(h.sim.url, 'QB_SECRET', { timezone: 'Europe/Zurich', pollIntervalMs: 20 }),
        `  ${job}:`,
        '    connection: sim',
        '    schedule: "0 6 * * *"',
        '    report: { mandant: 7777, name: Stock/Levels, paging: 100, parameters: { ROWS: "5" } }',
        `    target: { table: ${table}, mode: append }`,
        '',
      ].join('\n'),
    );
    const { logger } = captureLogger();
    const service = await startService({ configPath: path, logger, worker: true, prefix });
    try {
      // 2026-01-01 and -03 are midnight in Zurich: the ticks of 1 and 2 January at 06:00 Zurich (05:00 UTC).
      const first = await cli('backfill', job, '--from', '2026-01-01', '--to', '2026-01-03');
      expect(first.code, first.err).toBe(0);
      expect(first.out).toEqual([
        `2026-01-01 06:00:00+01:00  ${job}__20260101T050000Z  queued`,
        `2026-01-02 06:00:00+01:00  ${job}__20260102T050000Z  queued`,
        `${job}: 2 of 2 runs queued`,
      ]);
      await waitFor(
        '2 backfilled runs done',
        async () => (await attemptsOf(h.pool, job)).filter((r) => r.status === 'succeeded').length === 2,
        60_000,
      );
      await waitFor(
        'queue jobs completed',
        async () => (await queue.getJobCounts('completed')).completed === 2,
        60_000,
      );

      // The same period again: nothing is queued, and it says why and what to do.
      const again = await cli('backfill', job, '--from', '2026-01-01', '--to', '2026-01-03');
      expect(again.code, again.err).toBe(0);
      expect(again.out[0]).toMatch(
        /^2026-01-01 06:00:00\+01:00 {2}\S+__20260101T050000Z {2}already done \(completed\)$/,
      );
      expect(again.out[2]).toBe(
        `${job}: 0 of 2 runs queued; 2 already done (a tick's queue id is kept for 7 days after it ` +
          `ran, so it is not queued again): ` +
          'pass --force to run them again as new logical runs',
      );

      // --force: a new logical run per tick, with the tick's logical time; the append target gets the rows again.
      const forced = await cli('backfill', job, '--from', '2026-01-01', '--to', '2026-01-03', '--force');
      expect(forced.code, forced.err).toBe(0);
      const ids = forced.out
        .slice(0, 2)
        .map((l) => /\s(\S+__force_[0-9a-f]{8})\s+queued \(forced: new logical run\)$/.exec(l)?.[1]);
      expect(ids[0]).toMatch(new RegExp(`^${job}__20260101T050000Z__force_`));
      expect(ids[1]).toMatch(new RegExp(`^${job}__20260102T050000Z__force_`));
      expect(forced.out[2]).toBe(
        `${job}: 2 of 2 runs queued as new logical runs (--force: append targets get these ticks' rows again)`,
      );
      await waitFor(
        '2 forced runs done',
        async () => (await attemptsOf(h.pool, job)).filter((r) => r.status === 'succeeded').length === 4,
        60_000,
      );
      const runs = await attemptsOf(h.pool, job);
      expect(new Set(runs.map((r) => r.run_key)).size).toBe(4);
      expect(
        runs
          .filter((r) => ids.includes(r.run_key))
          .map((r) => [r.trigger, r.scheduled_for?.toISOString()])
          .sort(),
      ).toEqual([
        ['backfill', '2026-01-01T05:00:00.000Z'],
        ['backfill', '2026-01-02T05:00:00.000Z'],
      ]);
      const requests = await h.pool.query(
        'SELECT logical_start, logical_end FROM etl.runs WHERE job = $1 AND run_key = ANY($2) ORDER BY logical_end',
        [job, ids],
      );
      expect(requests.rows.map((r) => [r.logical_start.toISOString(), r.logical_end.toISOString()])).toEqual([
        ['2025-12-31T05:00:00.000Z', '2026-01-01T05:00:00.000Z'],
        ['2026-01-01T05:00:00.000Z', '2026-01-02T05:00:00.000Z'],
      ]);
      const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM ${table}`);
      expect(rows[0].n).toBe(20);
    } finally {
      await service.stop();
    }
  },
);
