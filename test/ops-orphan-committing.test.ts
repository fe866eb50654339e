/**
 * A worker killed while its COMMIT is under way: PostgreSQL completes the COMMIT it was sent, but the owner session
 * is gone at once, so the janitor finds the attempt orphaned while it still reads `running`. Its record must then
 * stay the committed one, and its run must not be handed back to be run again (docs/operations.md "No orphans (the
 * janitor)"). And a queue job taken again after its worker committed and died before BullMQ heard of it finds its run
 * succeeded and loads nothing (docs/architecture.md "Flow of one run"). Real PostgreSQL and Redis: a transaction that
 * has completed the attempt and not yet committed stands for the COMMIT in flight; the dead worker is a BullMQ worker
 * named by the owner lock that took the queue job.
 */
import { Worker } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { openAttemptOwner } from '../src/history/attempt-owner.ts';
import { completeAttempt } from '../src/history/attempts.ts';
import { silentLogger } from '../src/logger.ts';
import { enqueueManual } from '../src/queue/manual-run.ts';
import { ownerWorkerName, QUEUE_NAME } from '../src/queue/names.ts';
import type { QueuedRun } from '../src/queue/queue.ts';
import { uniqueName } from './support/env.ts';
import {
  attemptsOf,
  insertTestAttempt,
  janitorOf,
  useQueueBench,
  waitFor,
  waitForQueueJob,
  workerOf,
} from './support/queue-env.ts';

const jp = uniqueName('commitkill');
const prefix = uniqueName('commitkillq');
const { h, queue } = useQueueBench(prefix, jp);
const job = `${jp}_orders`;

it(
  'an orphan whose COMMIT was under way as its process died keeps its committed record, gets no ORPHANED error, ' +
    'and its run is not handed back to run again',
  async () => {
    const config = h.config({
      [job]: { connection: 'sim', report: { mandant: 7777, name: 'Sales/Orders' }, target: { table: 'orders' } },
    });
    const janitor = janitorOf(h, config, { prefix });
    const owner = await openAttemptOwner(h.pool, silentLogger);
    const dead = new Worker<QueuedRun>(QUEUE_NAME, null, {
      connection: h.redis,
      prefix,
      name: ownerWorkerName(owner.key),
    });
    const loadTx = await h.pool.connect();
    try {
      // The dying worker took the run's queue job and recorded its attempt under its owner lock.
      const { runKey, jobId } = await enqueueManual(queue, config, job, {}, undefined, undefined, h.pool);
      expect((await dead.getNextJob(randomUUID()))?.id).toBe(jobId);
      const attemptId = randomUUID();
      await insertTestAttempt(h.pool, {
        attemptId,
        job,
        runKey,
        targetTable: `${h.schema}.orders`,
        worker: 'dying:1',
        ownerLock: owner.key,
      });
      // Its load transaction has recorded the attempt succeeded and sent COMMIT; then the process dies.
      await loadTx.query('BEGIN');
      expect(await completeAttempt(loadTx, attemptId, { rows: 5, pages: 1, bytes: 100 })).toBe(true);
      await owner.close();
      const closing = janitor.closeOrphans([job]);
      // The janitor waits on the attempt's row, which the committing transaction holds.
      await waitFor('the janitor waiting on the committing attempt', async () => {
        const { rows } = await h.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%UPDATE etl.attempts%'`,
        );
        return rows[0]!.n > 0;
      });
      await loadTx.query('COMMIT');
      const [closed] = await closing;
      expect(closed).toMatchObject({ attemptId, closed: true, finished: true, handedBack: false });
      const { rows } = await h.pool.query<{ status: string; rows: string; error: string | null }>(
        'SELECT status, rows, error FROM etl.attempts WHERE attempt_id = $1',
        [attemptId],
      );
      expect(rows).toEqual([{ status: 'succeeded', rows: '5', error: null }]);
      const { rows: errors } = await h.pool.query('SELECT error_kind FROM etl.run_errors WHERE attempt_id = $1', [
        attemptId,
      ]);
      expect(errors).toEqual([]);
      // Still the dead worker's: not put back in the queue for another worker to load the run a second time.
      expect(await (await queue.getJob(jobId))!.getState()).toBe('active');
    } finally {
      loadTx.release();
      await owner.close();
      await dead.close(true);
      await janitor.close();
    }
  },
  60_000,
);

it(
  'a manual run whose worker died after its commit, before completing its queue job: the next worker to take the ' +
    'queue job finds the run succeeded and starts nothing',
  async () => {
    const config = h.config({
      [`${job}_done`]: {
        connection: 'sim',
        report: { mandant: 7777, name: 'Sales/Orders' },
        target: { table: 'orders_done' },
      },
    });
    const name = `${job}_done`;
    const { runKey, jobId } = await enqueueManual(queue, config, name, {}, undefined, undefined, h.pool);
    // The dying worker took the queue job, committed its attempt, and died before telling BullMQ.
    const dead = new Worker<QueuedRun>(QUEUE_NAME, null, { connection: h.redis, prefix, lockDuration: 500 });
    expect((await dead.getNextJob(randomUUID()))?.id).toBe(jobId);
    await dead.close(true);
    const attemptId = randomUUID();
    await insertTestAttempt(h.pool, {
      attemptId,
      job: name,
      runKey,
      targetTable: `${h.schema}.orders_done`,
      worker: 'dead:1',
    });
    expect(await completeAttempt(h.pool, attemptId, { rows: 5, pages: 1, bytes: 100 })).toBe(true);
    const created = h.sim.counters().jobsCreated;
    const worker = workerOf(h, config, { prefix, lockDurationMs: 1_000, stalledIntervalMs: 300 });
    try {
      const done = await waitForQueueJob(
        queue,
        jobId,
        'completed',
        'the queue job completed by the next worker',
        30_000,
      );
      expect(done.returnvalue).toEqual({ status: 'already-succeeded' });
      expect((await attemptsOf(h.pool, name)).map((a) => [a.attempt, a.status])).toEqual([[1, 'succeeded']]);
      expect(h.sim.counters().jobsCreated).toBe(created);
    } finally {
      await worker.close(0);
    }
  },
  60_000,
);
