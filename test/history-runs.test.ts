/**
 * etl.runs, one row per logical run, kept in step with etl.attempts by the statements that insert, complete and
 * fail attempts: attempt count, the newest attempt's status, first start, last finish, rows; the request of a
 * queued run; and what a run key or an attempt id names.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { completeAttempt, failAttempt, insertAttempt, type AttemptStart } from '../src/history/attempts.ts';
import { jobFilterSql, listAttempts } from '../src/history/attempt-list.ts';
import { findRunOrAttempt } from '../src/history/run-or-attempt.ts';
import { listRuns } from '../src/history/run-list.ts';
import { recordRunRequest } from '../src/history/runs.ts';
import { uniqueName } from './support/env.ts';
import { attemptFailure, type Harness, jobEntry, startHarness } from './support/harness.ts';
import { attemptsOf, deleteRuns, runsOf } from './support/queue-env.ts';

const jp = uniqueName('hruns');
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await deleteRuns(h.pool, jp);
  await h?.close();
});

const start = (job: string, runKey: string, o: Partial<AttemptStart> = {}): AttemptStart => ({
  attemptId: randomUUID(),
  job,
  runKey,
  trigger: 'manual',
  targetTable: 'x.y',
  writeMode: 'replace',
  worker: 'test',
  ...o,
});
const failure = {
  status: 'failed' as const,
  stage: 'poll' as const,
  errorKind: 'REPORT_FAILED',
  retryable: false,
  message: 'report job failed',
};

it(
  'a run whose first attempt failed and second succeeded is one run row: 2 attempts, ' +
    'succeeded, the rows of the success',
  async () => {
    const job = `${jp}_orders`;
    const runKey = `${job}__manual_1`;
    const table = `${h.schema}.orders`;
    const request = { runKey, trigger: 'manual' as const };
    const failing = h.config({ [job]: jobEntry({ name: 'Failing', outputType: 'json' }, { table }) });
    const err = await attemptFailure(h.run(failing, job, request));
    expect(await runsOf(h.pool, job)).toMatchObject([{ run_key: runKey, attempts: 1, status: 'failed', rows: null }]);

    const working = h.config({
      [job]: jobEntry({ name: 'Sales/Orders', outputType: 'json', paging: 50, parameters: { ROWS: '120' } }, { table }),
    });
    const ok = await h.run(working, job, request);
    expect(ok).toMatchObject({ runKey, attempt: 2, rows: 120 });

    const attempts = await attemptsOf(h.pool, job);
    expect(attempts.map((a) => [a.attempt_id, a.attempt, a.status, a.rows])).toEqual([
      [err.attemptId, 1, 'failed', '0'],
      [ok.attemptId, 2, 'succeeded', '120'],
    ]);
    const runs = await runsOf(h.pool, job);
    // A run made by its first attempt keeps the logical time it asked for: "now" then, with no schedule an instant.
    expect(runs[0]!.logical_end).toEqual(runs[0]!.logical_start);
    expect(Math.abs(runs[0]!.logical_end!.getTime() - attempts[0]!.started_at.getTime())).toBeLessThan(60_000);
    expect(runs).toEqual([
      {
        job,
        run_key: runKey,
        trigger: 'manual',
        scheduled_for: null,
        logical_start: expect.any(Date),
        logical_end: expect.any(Date),
        parameters: null,
        queue_job_id: null,
        queued_at: null,
        created_at: attempts[0]!.started_at,
        attempts: 2,
        status: 'succeeded',
        first_started_at: attempts[0]!.started_at,
        last_finished_at: attempts[1]!.finished_at,
        rows: '120',
      },
    ]);
  },
);

it('attempts of one run started at the same time get distinct numbers, and the run counts them all', async () => {
  const job = `${jp}_race`;
  const numbers = await Promise.all(Array.from({ length: 6 }, () => insertAttempt(h.pool, start(job, 'k'))));
  expect(numbers.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6]);
  expect(await runsOf(h.pool, job)).toMatchObject([{ run_key: 'k', attempts: 6, status: 'running' }]);
});

it('the run takes its status from its newest attempt only: an older one closed late does not change it', async () => {
  const job = `${jp}_late`;
  const first = start(job, 'k');
  const second = start(job, 'k');
  await insertAttempt(h.pool, first);
  await insertAttempt(h.pool, second);
  // A later attempt (or the janitor) records the first one interrupted while the second runs.
  await failAttempt(h.pool, first.attemptId, { ...failure, status: 'interrupted', errorKind: 'ABORTED' });
  let [run] = await runsOf(h.pool, job);
  expect(run).toMatchObject({ attempts: 2, status: 'running', rows: null });
  const firstEnd = run!.last_finished_at;
  expect(firstEnd).toBeInstanceOf(Date);
  expect(await completeAttempt(h.pool, second.attemptId, { rows: 9, pages: 1, bytes: 90 })).toBe(true);
  // An attempt no longer running cannot end again, and changes nothing.
  expect(await completeAttempt(h.pool, first.attemptId, { rows: 1, pages: 1, bytes: 1 })).toBe(false);
  [run] = await runsOf(h.pool, job);
  expect(run).toMatchObject({ attempts: 2, status: 'succeeded', rows: '9' });
  expect(run!.last_finished_at!.getTime()).toBeGreaterThanOrEqual(firstEnd!.getTime());
  const { rows } = await h.pool.query('SELECT finished_at FROM etl.attempts WHERE attempt_id = $1', [second.attemptId]);
  expect(run!.last_finished_at).toEqual(rows[0].finished_at);
});

it(
  'an attempt that found the rows already appended (succeeded, 0 rows) ' +
    'keeps the rows of the success that loaded them',
  async () => {
    const job = `${jp}_append`;
    const loaded = start(job, 'k', { writeMode: 'append' });
    const again = start(job, 'k', { writeMode: 'append' });
    await insertAttempt(h.pool, loaded);
    await completeAttempt(h.pool, loaded.attemptId, { rows: 7, pages: 1, bytes: 70 });
    await insertAttempt(h.pool, again);
    await completeAttempt(h.pool, again.attemptId, { rows: 0, pages: 0, bytes: 0 });
    expect(await runsOf(h.pool, job)).toMatchObject([{ attempts: 2, status: 'succeeded', rows: '7' }]);
  },
);

it(
  'a queued run has its row from its request on: no attempt yet, then its attempts; ' +
    'a replay keeps the trigger it was made with',
  async () => {
    const job = `${jp}_queued`;
    const tick = new Date('2026-01-22T02:15:00Z');
    const runKey = `${job}__20260122T021500Z`;
    const queuedAt = new Date(Date.now() - 90_000);
    const req = {
      job,
      runKey,
      queueJobId: runKey,
      trigger: 'schedule' as const,
      scheduledFor: tick,
      logicalStart: new Date('2026-01-21T02:15:00Z'),
      logicalEnd: tick,
      queuedAt,
    };
    await recordRunRequest(h.pool, req);
    expect(await runsOf(h.pool, job)).toMatchObject([
      {
        trigger: 'schedule',
        scheduled_for: tick,
        queue_job_id: runKey,
        queued_at: queuedAt,
        attempts: 0,
        status: null,
        first_started_at: null,
      },
    ]);
    const first = start(job, runKey, { trigger: 'schedule', scheduledFor: tick });
    await insertAttempt(h.pool, first);
    await failAttempt(h.pool, first.attemptId, failure);
    // The replay's worker records its request too: the first one stays.
    // The first request wins: a replay queued later keeps the run's queue job, parameters and queue time.
    await recordRunRequest(h.pool, {
      ...req,
      queueJobId: `${runKey}__replay_${first.attemptId}`,
      trigger: 'replay',
      parameters: { X: '1' },
      queuedAt: new Date(),
    });
    const replay = start(job, runKey, { trigger: 'replay', scheduledFor: tick });
    expect(await insertAttempt(h.pool, replay)).toBe(2);
    expect(await runsOf(h.pool, job)).toMatchObject([
      {
        trigger: 'schedule',
        queue_job_id: runKey,
        parameters: null,
        queued_at: queuedAt,
        attempts: 2,
        status: 'running',
      },
    ]);
  },
);

it('a run key or an attempt id names its run; a run key of two jobs is ambiguous until the job is given', async () => {
  const a = `${jp}_name_a`;
  const b = `${jp}_name_b`;
  const attempt = start(a, `${jp}_shared`);
  await insertAttempt(h.pool, attempt);
  await insertAttempt(h.pool, start(b, `${jp}_shared`));
  const byAttempt = await findRunOrAttempt(h.pool, attempt.attemptId);
  expect(byAttempt).toMatchObject({
    kind: 'attempt',
    attempt: { attempt_id: attempt.attemptId, attempt: 1 },
    run: { job: a, run_key: `${jp}_shared` },
  });
  expect(await findRunOrAttempt(h.pool, `${jp}_shared`)).toEqual({ kind: 'ambiguous', jobs: [a, b] });
  expect(await findRunOrAttempt(h.pool, `${jp}_shared`, b)).toMatchObject({
    kind: 'run',
    run: { job: b, run_key: `${jp}_shared`, attempts: 1 },
  });
  expect(await findRunOrAttempt(h.pool, attempt.attemptId, b)).toEqual({ kind: 'none' });
  expect(await findRunOrAttempt(h.pool, randomUUID())).toEqual({ kind: 'none' });
  expect(await findRunOrAttempt(h.pool, 'no such key')).toEqual({ kind: 'none' });
});

it("a job's filter takes in its mandants' runs and attempts, reads `_` and `%` literally, by an index", async () => {
  // The job names allow `_`, LIKE's one-character wildcard; `runs --job` takes any text.
  const job = `${jp}_f_b`;
  const jobs = [job, `${job}[7777]`, `${job}[8888]`, `${jp}_fxb[7777]`, `${job}c`, `${job}c[7777]`, `${job}%[1]`];
  for (const j of jobs) await insertAttempt(h.pool, start(j, `${jp}_filter`));
  const mine = [job, `${job}[7777]`, `${job}[8888]`];
  expect((await listRuns(h.pool, { job })).map((r) => r.job).sort()).toEqual(mine);
  expect((await listAttempts(h.pool, { job })).map((a) => a.job).sort()).toEqual(mine);
  expect((await listRuns(h.pool, { job: `${jp}_f%` })).map((r) => r.job)).toEqual([]);
  expect((await listRuns(h.pool, { job: `${job}%` })).map((r) => r.job)).toEqual([`${job}%[1]`]);
  // The plan the filter gets when the index is the cheaper way (a table of many runs): its prefix is an index
  // range, where left(job, …) was a filter over every row.
  for (const table of ['etl.runs', 'etl.attempts']) {
    const client = await h.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SET LOCAL enable_seqscan = off');
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT * FROM ${table} t WHERE ${jobFilterSql('t.job', '$1')}`,
        [job],
      );
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(plan, table).toMatch(
        /Index Cond: \(\(job ~>=~ '[^']*_f_b\['::text\) AND \(job ~<~ '[^']*_f_b\\'::text\)\)/,
      );
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  }
});
