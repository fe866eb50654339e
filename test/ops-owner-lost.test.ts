/**
 * A worker that lost only its owner session (its PostgreSQL backend terminated, a network blip) while it loaded: the
 * janitor of another process takes the attempt for an orphan, deletes its report job and hands the run back, and the
 * worker, still alive, then fails on the vanished report job. That failure is a consequence, not the run's: no
 * `failed` alert (the run goes on and succeeds), and the janitor's words stay the attempt's record (docs/operations.md
 * "No orphans (the janitor)"). Real PostgreSQL, Redis and simulator; the session is ended with pg_terminate_backend.
 */
import { expect, it } from 'vitest';
import { openAttemptOwner } from '../src/history/attempt-owner.ts';
import { silentLogger } from '../src/logger.ts';
import { enqueueManual } from '../src/queue/manual-run.ts';
import { uniqueName } from './support/env.ts';
import { jobEntry } from './support/harness.ts';
import { attemptsOf, janitorOf, useQueueBench, waitFor, workerOf } from './support/queue-env.ts';

const jp = uniqueName('ownerlost');
const prefix = uniqueName('ownerlostq');
// Each answer 100 ms late: 30 pages load in some 3 s, long enough to end the session mid-load.
const { h, queue } = useQueueBench(prefix, jp, { jobDurationMs: 50, faults: { latencyMs: 100 } });
const job = `${jp}_orders`;

it(
  'a worker whose owner session was ended mid-load: its attempt is closed as an orphan, the run goes on and ' +
    'succeeds, and no failed alert is sent for the failure the deleted report job caused',
  async () => {
    const config = h.config({
      [job]: {
        ...jobEntry({ name: 'Sales/Orders', paging: 100, parameters: { ROWS: '3000' } }, { table: `${h.schema}.o` }),
        retry: { attempts: 3, backoffMs: 100 },
      },
    });
    const failed: { attemptId: string; error: Error }[] = [];
    const owner = await openAttemptOwner(h.pool, silentLogger);
    const worker = workerOf(h, config, {
      prefix,
      owner,
      alerts: { succeeded: async () => undefined, failed: async (o) => void failed.push(o) },
    });
    // Another process's janitor, as in a scheduler.
    const janitor = janitorOf(h, config, { prefix });
    try {
      const { runKey } = await enqueueManual(queue, config, job);
      const first = await waitFor(
        'attempt 1 loading',
        async () => {
          const { rows } = await h.pool.query<{ attempt_id: string }>(
            `SELECT attempt_id FROM etl.attempts
              WHERE job = $1 AND attempt = 1 AND status = 'running' AND (progress->>'page')::int >= 3`,
            [job],
          );
          return rows[0]?.attempt_id;
        },
        30_000,
        50,
      );
      // The owner session's backend is ended; the janitor comes by before the worker opened a new one.
      const { rows: ended } = await h.pool.query<{ ok: boolean }>(
        `SELECT pg_terminate_backend(pid) AS ok FROM pg_locks
          WHERE locktype = 'advisory' AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = $1::bigint`,
        [owner.key],
      );
      expect(ended).toEqual([{ ok: true }]);
      const closed = await waitFor('the janitor closing attempt 1', async () => {
        const c = await janitor.closeOrphans([job]);
        return c.length > 0 && c;
      });
      expect(closed).toMatchObject([{ attemptId: first, closed: true, handedBack: true }]);
      const done = await waitFor(
        'the run succeeded in a later attempt',
        async () => {
          const rows = await attemptsOf(h.pool, job);
          return rows.some((r) => r.status === 'succeeded') && rows;
        },
        60_000,
      );
      expect(failed.map((f) => f.error.message)).toEqual([]);
      expect(done[0]).toMatchObject({ attempt_id: first, status: 'interrupted' });
      expect(done[0]!.error).toMatch(/^orphaned: the process that ran attempt 1 /);
      expect(done.at(-1)!.run_key).toBe(runKey);
    } finally {
      await janitor.close();
      await worker.close(0);
      await owner.close();
    }
  },
  120_000,
);
