/**
 * PostgreSQL lost mid-load: the attempt fails as a
 * retryable DATABASE error, its end is recorded once the database is back (not left `running`), nothing is
 * committed, the report job is deleted, and the next attempt succeeds. The database is taken away through a TCP
 * proxy, so the PostgreSQL server other test files share keeps running.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makePool } from '../src/app/connections.ts';
import { resolveJob } from '../src/config/load.ts';
import { databaseError } from '../src/warehouse/load-errors.ts';
import { runAttempt } from '../src/pipeline/run-attempt.ts';
import { captureLogger } from './support/queue-env.ts';
import { DATABASE_URL } from './support/env.ts';
import { attemptFailure, type Harness, jobEntry, startHarness } from './support/harness.ts';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.ts';
import { waitFor } from './support/wait.ts';

let h: Harness;
let proxy: TcpProxy;
beforeAll(async () => {
  h = await startHarness();
  const url = new URL(DATABASE_URL);
  proxy = await startTcpProxy(Number(url.port || 5432), url.hostname);
});
afterAll(async () => {
  await proxy?.close();
  await h?.close();
});

it('classifies lost and refused connections as retryable, SQL problems not', () => {
  for (const code of ['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', '57P01', '08006', '53300', '57P03']) {
    expect(databaseError(Object.assign(new Error(`x ${code}`), { code }), 'load')).toMatchObject({
      code: 'DATABASE',
      retryable: true,
    });
  }
  expect(databaseError(new Error('Connection terminated unexpectedly'), 'load')).toMatchObject({ retryable: true });
  expect(databaseError(new Error('timeout exceeded when trying to connect'), 'load')).toMatchObject({
    retryable: true,
  });
  expect(databaseError(Object.assign(new Error('syntax error'), { code: '42601' }), 'load')).toMatchObject({
    retryable: false,
  });
});

it(
  'an attempt that loses PostgreSQL mid-load fails retryable, ' +
    'is recorded once it is back, and the next attempt loads',
  async () => {
    const proxied = new URL(DATABASE_URL);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(proxy.port);
    const pool = makePool(captureLogger().logger, proxied.toString(), 4);
    const table = `${h.schema}.orders_lost`;
    const config = h.config({
      o: jobEntry({ name: 'Sales/Orders', outputType: 'json', paging: 200, parameters: { ROWS: '3000' } }, { table }),
    });
    const { logger, lines } = captureLogger();
    h.sim.setFaults({ latencyMs: 100 });
    let restored = false;
    try {
      const pending = runAttempt({ job: resolveJob(config, 'o'), pool, redis: h.redis, logger });
      // Take the database away once rows are flowing, and bring it back a few seconds later.
      await waitFor('a page loaded', () => lines.some((l) => l.msg === 'page loaded'));
      proxy.cut();
      await waitFor('the attempt to wait for PostgreSQL', () =>
        lines.some(
          (l) => l.msg === 'PostgreSQL cannot be reached or has no room: recording the failed attempt once it can',
        ),
      );
      h.sim.setFaults({});
      proxy.restore();
      restored = true;
      const err = await attemptFailure(pending);
      expect(err).toMatchObject({ code: 'DATABASE', retryable: true });
      const { rows } = await h.pool.query(
        'SELECT r.status, e.error_kind, e.retryable FROM etl.attempts r JOIN etl.run_errors e USING ' +
          '(attempt_id) WHERE r.attempt_id = $1',
        [err.attemptId],
      );
      expect(rows).toEqual([{ status: 'failed', error_kind: 'DATABASE', retryable: true }]);
      expect(lines.some((l) => l.msg === 'PostgreSQL is back: the failed attempt is recorded')).toBe(true);
      const exists = await h.pool.query('SELECT to_regclass($1) AS t', [table]);
      expect(exists.rows[0].t).toBeNull();
      expect(h.sim.counters().openJobs).toEqual([]);
      // The pool dropped its broken clients: the next attempt through the same pool loads everything.
      const next = await runAttempt({ job: resolveJob(config, 'o'), pool, redis: h.redis, logger });
      expect(next).toMatchObject({ status: 'succeeded', rows: 3000 });
    } finally {
      if (!restored) proxy.restore();
      h.sim.setFaults({});
      await pool.end();
    }
  },
);
