/**
 * Kept pages read back (docs/operations.md "Kept pages") over a connection that waits: a chunk query stuck behind a
 * lock is cancelled once the attempt is aborted (a shutdown, maxRunMs, the page's deadline), so that a replay
 * `--from-pages` ends when it is told to, not when the lock goes.
 */
import pg from 'pg';
import { describe, expect, it, vi } from 'vitest';
import { AttemptFailedError } from '../src/pipeline/attempt.ts';
import type { AttemptOptions } from '../src/pipeline/run-attempt.ts';
import { pagesConnectionName } from '../src/history/page-archive.ts';
import { DATABASE_URL, uniqueName } from './support/env.ts';
import { jobEntry, useHarness, type Harness } from './support/harness.ts';

const h = useHarness();

const run = (
  config: ReturnType<Harness['config']>,
  job: string,
  request: AttemptOptions['request'],
  signal?: AbortSignal,
) => h.run(config, job, request, { signal });

describe('kept pages read behind a lock', () => {
  it('a replay --from-pages whose chunk query waits for a lock ends once it is aborted', async () => {
    const job = uniqueName('rb');
    const table = `${h.schema}.read_bounded`;
    const config = h.config({
      [job]: jobEntry(
        { name: 'Sales/Orders', outputType: 'json', paging: 100, parameters: { ROWS: '250' } },
        { table, mode: 'replace', archive: { keepDays: 1 } },
      ),
    });
    const runKey = uniqueName('rb');
    const kept = await run(config, job, { runKey });
    await h.pool.query(`TRUNCATE ${table}`);

    // Another session holds the chunks' table, as a VACUUM FULL or a migration would. Other test files' kept pages
    // wait for it too: it is held only until the replay has ended, or for 30 s when it does not end.
    const locker = new pg.Client({ connectionString: DATABASE_URL });
    await locker.connect();
    let lockHeld = true;
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE etl.attempt_page_chunks IN ACCESS EXCLUSIVE MODE');
      const stop = new AbortController();
      const replay = run(config, job, { runKey, trigger: 'replay', pagesOf: kept.attemptId }, stop.signal).then(
        () => ({ err: undefined as unknown, whileLocked: lockHeld }),
        (err: unknown) => ({ err, whileLocked: lockHeld }),
      );
      const lockPid = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      /** How many of the kept attempt's pages connections wait for the lock. */
      const waitingForLock = async () =>
        (
          await h.pool.query(
            `SELECT 1 FROM pg_stat_activity WHERE application_name = $2 AND $1 = ANY(pg_blocking_pids(pid))`,
            [lockPid, pagesConnectionName(kept.attemptId)],
          )
        ).rowCount;
      // The replay's reading connection waits for the lock: then it is told to stop, as a shutdown tells it. Other
      // files' connections of kept pages may wait too: the name tells this one's (the kept attempt's).
      await vi.waitFor(async () => expect(await waitingForLock()).toBe(1), { timeout: 30_000, interval: 50 });
      stop.abort();
      const released = setTimeout(() => {
        lockHeld = false;
        void locker.query('ROLLBACK').catch(() => undefined);
      }, 30_000);
      const { err, whileLocked } = await replay;
      clearTimeout(released);
      expect(whileLocked).toBe(true);
      expect(err).toBeInstanceOf(AttemptFailedError);
      expect((err as AttemptFailedError).code).toBe('ABORTED');
      // Nothing of the kept pages' reading is left waiting for the lock.
      await vi.waitFor(async () => expect(await waitingForLock()).toBe(0), { timeout: 30_000, interval: 50 });
      expect(Number((await h.pool.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n)).toBe(0);
    } finally {
      lockHeld = false;
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
  });
});
