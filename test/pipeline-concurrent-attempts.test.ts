/**
 * Two attempts of one run at the same time ("A run
 * that lost its overlap lock still commits"): a second attempt whose run has a live attempt in progress starts
 * nothing on the server; an attempt whose overlap lock was lost does not commit, and stops at once when its renewal
 * finds it lost mid-load; both are retried. An attempt that ends before it needs the server does not wait for it.
 */
import { createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { resolveJob } from '../src/config/load.ts';
import { openAttemptOwner } from '../src/history/attempt-owner.ts';
import { readProgress } from '../src/history/attempt-progress.ts';
import { getAttempt } from '../src/history/attempts.ts';
import { silentLogger } from '../src/logger.ts';
import { runAttempt } from '../src/pipeline/run-attempt.ts';
import { overlapLockKey } from '../src/queue/names.ts';
import { tryOverlapLock } from '../src/queue/overlap-lock.ts';
import { ReportSlots } from '../src/report-api/report-slots.ts';
import { testPrefix, uniqueName } from './support/env.ts';
import { attemptFailure, type Harness, jobEntry, startHarness } from './support/harness.ts';
import { waitFor } from './support/queue-env.ts';

let h: Harness;
beforeAll(async () => {
  // Report jobs stay Running 1 s: long enough to start a second attempt while the first one waits.
  h = await startHarness({ jobDurationMs: 1_000 });
});
afterAll(async () => {
  await h?.close();
});

it(
  'a second attempt of an append run that is still loading starts no report job, ' + 'and the run is appended once',
  async () => {
    const job = uniqueName('dup');
    const table = `${h.schema}.ledger_dup`;
    const config = h.config({
      [job]: jobEntry(
        { name: 'Finance/Ledger.avx', outputType: 'json', paging: 100, parameters: { ROWS: '300' } },
        { table, mode: 'append' },
      ),
    });
    const runKey = uniqueName('tick');
    // Two processes: each has its own owner session, as a worker or `report-etl run` does.
    const [ownerA, ownerB] = await Promise.all([
      openAttemptOwner(h.pool, silentLogger),
      openAttemptOwner(h.pool, silentLogger),
    ]);
    try {
      const first = h.run(config, job, { runKey }, { owner: ownerA });
      await waitFor('the first attempt started its report job', async () => {
        const { rows } = await h.pool.query('SELECT report_job_id FROM etl.attempts WHERE job = $1 AND run_key = $2', [
          job,
          runKey,
        ]);
        return rows[0]?.report_job_id;
      });
      const created = h.sim.counters().jobsCreated;
      const second = await attemptFailure(h.run(config, job, { runKey }, { owner: ownerB }));
      expect(second).toMatchObject({ code: 'RUN_IN_PROGRESS', retryable: true });
      expect(h.sim.counters().jobsCreated).toBe(created);
      expect(await first).toMatchObject({ status: 'succeeded', rows: 300 });
      // Retried after the first committed: nothing to download, nothing added.
      const retried = await h.run(config, job, { runKey }, { owner: ownerB });
      expect(retried).toMatchObject({ status: 'already-loaded', rows: 0 });
      expect(h.sim.counters().jobsCreated).toBe(created);
      const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM ${table}`);
      expect(rows[0].n).toBe(300);
      expect(h.sim.counters().openJobs).toEqual([]);
    } finally {
      await Promise.all([ownerA.close(), ownerB.close()]);
    }
  },
);

/**
 * Expects the one attempt of `job` recorded failed with OVERLAP_LOCK_LOST at `stage`, its report job deleted, and
 * `table` holding only the row it held before (1, 'before').
 */
async function expectLockLostUntouched(job: string, table: string, stage: string): Promise<void> {
  const { rows } = await h.pool.query(`SELECT count(*)::int AS n, min(kunde) AS k FROM ${table}`);
  expect(rows[0]).toEqual({ n: 1, k: 'before' });
  expect(h.sim.counters().openJobs).toEqual([]);
  const recorded = await h.pool.query(
    `SELECT r.status, e.error_kind, e.stage FROM etl.attempts r JOIN etl.run_errors e USING (attempt_id)
      WHERE r.job = $1`,
    [job],
  );
  expect(recorded.rows).toEqual([{ status: 'failed', error_kind: 'OVERLAP_LOCK_LOST', stage }]);
}

it(
  'an attempt whose overlap lock was lost before the commit rolls back, ' + 'deletes its report job and is retryable',
  async () => {
    const job = uniqueName('lost');
    const table = `${h.schema}.orders_lost_lock`;
    const config = h.config({
      [job]: jobEntry(
        { name: 'Sales/Orders', outputType: 'json', paging: 200, parameters: { ROWS: '600' } },
        { table },
      ),
    });
    await h.pool.query(`CREATE TABLE ${table} (auftrag_nr bigint, kunde text)`);
    await h.pool.query(`INSERT INTO ${table} VALUES (1, 'before')`);
    const prefix = uniqueName('ol');
    const key = overlapLockKey(prefix, job);
    const lock = (await tryOverlapLock(h.redis, key, 'queue-job-1', silentLogger, 60_000))!;
    try {
      const pending = h.run(config, job, { runKey: uniqueName('tick') }, { exclusive: lock });
      await waitFor('the report job exists', async () => {
        const { rows } = await h.pool.query(`SELECT report_job_id FROM etl.attempts WHERE job = $1`, [job]);
        return rows[0]?.report_job_id;
      });
      // Redis comes back empty, and another worker takes the lock for another run of the job.
      await h.redis.set(key, 'queue-job-2|someone-else', 'PX', 60_000);
      const err = await pending.catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'OVERLAP_LOCK_LOST', retryable: true });
      // The attempt cannot know whether its run has attempts left, or whether another worker took the run over.
      expect((err as Error).message).toMatch(
        /its rows are not committed; the run is retried while it has attempts left/,
      );
      await expectLockLostUntouched(job, table, 'commit');
    } finally {
      await lock.release();
      await h.redis.del(key);
    }
  },
);

it(
  'an attempt whose overlap lock is lost mid-load stops at once: it reads no further pages, rolls back, ' +
    'deletes its report job and is retryable',
  async () => {
    const job = uniqueName('lostmid');
    const table = `${h.schema}.orders_lost_mid`;
    // 60 pages of at least 100 ms each: a load that went on to its commit would read them all.
    const config = h.config({
      [job]: jobEntry(
        { name: 'Sales/Orders', outputType: 'json', paging: 100, parameters: { ROWS: '6000' } },
        { table },
      ),
    });
    await h.pool.query(`CREATE TABLE ${table} (auftrag_nr bigint, kunde text)`);
    await h.pool.query(`INSERT INTO ${table} VALUES (1, 'before')`);
    const prefix = uniqueName('ol');
    const key = overlapLockKey(prefix, job);
    // Renewed every 200 ms: a loss is found within that.
    const lock = (await tryOverlapLock(h.redis, key, 'queue-job-1', silentLogger, 600))!;
    h.sim.setFaults({ latencyMs: 100 });
    try {
      const pending = h.run(config, job, { runKey: uniqueName('tick') }, { exclusive: lock });
      await waitFor('two pages read', async () => {
        const { rows } = await h.pool.query(`SELECT progress FROM etl.attempts WHERE job = $1`, [job]);
        return (readProgress(rows[0]?.progress)?.pagesRead ?? 0) >= 2;
      });
      // Redis loses the key (a restart without persistence, an eviction).
      await h.redis.del(key);
      const err = await attemptFailure(pending);
      expect(err).toMatchObject({ code: 'OVERLAP_LOCK_LOST', retryable: true });
      expect(err.message).toMatch(/its rows are not committed; the run is retried while it has attempts left/);
      const progress = readProgress((await getAttempt(h.pool, err.attemptId))!.progress)!;
      expect(progress.pages).toBe(60);
      expect(progress.pagesRead).toBeLessThan(30);
      await expectLockLostUntouched(job, table, 'load');
    } finally {
      h.sim.setFaults({});
      await lock.release();
      await h.redis.del(key);
    }
  },
);

it(
  'an attempt whose overlap lock is lost while it waits for a report slot is recorded failed OVERLAP_LOCK_LOST ' +
    'once it has one, retryable, with nothing started on the server',
  async () => {
    const job = uniqueName('lostslot');
    const config = h.config(
      { [job]: jobEntry({ name: 'Sales/Orders', parameters: { ROWS: '10' } }, { table: `${h.schema}.orders_slot` }) },
      { maxConcurrentReports: 1 },
    );
    const prefix = testPrefix('os');
    const slots = new ReportSlots(h.redis, { prefix, pollMs: 100 });
    const key = overlapLockKey(prefix, job);
    const lock = (await tryOverlapLock(h.redis, key, 'queue-job-1', silentLogger, 600))!;
    // The connection's one slot is another run's.
    const other = await slots.acquire('sim', 1);
    const created = h.sim.counters().jobsCreated;
    try {
      const pending = h.run(config, job, { runKey: uniqueName('tick') }, { exclusive: lock, slots });
      pending.catch(() => undefined); // awaited below, after the slot is freed
      // Redis loses the key while the attempt waits: its renewal finds it lost.
      await h.redis.del(key);
      await waitFor('the lock found lost', () => lock.lost.aborted);
      await other.release();
      const err = await attemptFailure(pending);
      expect(err).toMatchObject({ code: 'OVERLAP_LOCK_LOST', retryable: true });
      const recorded = await h.pool.query(
        `SELECT r.status, e.error_kind FROM etl.attempts r JOIN etl.run_errors e USING (attempt_id) WHERE r.job = $1`,
        [job],
      );
      expect(recorded.rows).toEqual([{ status: 'failed', error_kind: 'OVERLAP_LOCK_LOST' }]);
      expect(h.sim.counters().jobsCreated).toBe(created);
    } finally {
      await other.release();
      await lock.release();
      await h.redis.del(key);
    }
  },
);

it(
  'an attempt that ends before it needs the server (already loaded) ' +
    'does not wait for a server that does not answer',
  async () => {
    const job = uniqueName('hang');
    const table = `${h.schema}.ledger_hang`;
    const entry = jobEntry(
      { name: 'Finance/Ledger.avx', outputType: 'json', paging: 100, parameters: { ROWS: '50' } },
      { table, mode: 'append' },
    );
    const runKey = uniqueName('tick');
    expect(
      await runAttempt({
        job: resolveJob(h.config({ [job]: entry }), job),
        request: { runKey },
        pool: h.pool,
        redis: h.redis,
        logger: silentLogger,
      }),
    ).toMatchObject({ status: 'succeeded', rows: 50 });
    // A server that accepts connections and never answers: discovery would wait requestTimeoutMs (60 s), retried.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => void sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const hanging = h.config(
        { [job]: entry },
        { baseUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, requestTimeoutMs: 60_000 },
      );
      const again = await h.run(hanging, job, { runKey });
      expect(again).toMatchObject({ status: 'already-loaded', rows: 0 });
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  },
);
