/**
 * A full PostgreSQL (53300 too many connections) is a transient state, not a failure: an attempt that cannot get a
 * connection waits until PostgreSQL has room, records itself and loads. The server's capacity is played by a role
 * with CONNECTION LIMIT 1 whose one connection another client holds, so the PostgreSQL other test files share is
 * never full.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makePool } from '../src/app/connections.ts';
import { resolveJob } from '../src/config/load.ts';
import { runAttempt } from '../src/pipeline/run-attempt.ts';
import { DATABASE_URL, uniqueName } from './support/env.ts';
import { jobEntry, startHarness, type Harness } from './support/harness.ts';
import { captureLogger, waitFor } from './support/queue-env.ts';

let h: Harness;
const role = uniqueName('etl_cap');
let roleUrl: string;

beforeAll(async () => {
  h = await startHarness();
  await h.pool.query(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 1`);
  await h.pool.query(`GRANT USAGE, CREATE ON SCHEMA etl, ${h.schema} TO ${role}`);
  await h.pool.query(`GRANT ALL ON ALL TABLES IN SCHEMA etl TO ${role}`);
  await h.pool.query(`GRANT ALL ON ALL SEQUENCES IN SCHEMA etl TO ${role}`);
  const url = new URL(DATABASE_URL);
  url.username = role;
  url.password = '';
  roleUrl = url.toString();
});
afterAll(async () => {
  await h.pool.query(`DROP OWNED BY ${role} CASCADE`).catch(() => undefined);
  await h.pool.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
  await h?.close();
});

it('an attempt that finds PostgreSQL full (53300) waits for room, then records itself and loads', async () => {
  const blocker = new pg.Client({ connectionString: roleUrl });
  await blocker.connect();
  const pool = makePool(captureLogger().logger, roleUrl, 1);
  const { logger, lines } = captureLogger();
  const table = `${h.schema}.orders_full`;
  const config = h.config({
    o: jobEntry({ name: 'Sales/Orders', outputType: 'txt', paging: 100, parameters: { ROWS: '250' } }, { table }),
  });
  let released = false;
  try {
    const pending = runAttempt({ job: resolveJob(config, 'o'), pool, redis: h.redis, logger });
    await waitFor('the attempt to wait for room', () =>
      lines.some((l) => l.msg === 'PostgreSQL cannot be reached or has no room: the attempt starts once it can'),
    );
    expect(String(lines.find((l) => String(l.msg).startsWith('PostgreSQL cannot'))!.err)).toMatch(
      /too many connections/,
    );
    await blocker.end();
    released = true;
    expect(await pending).toMatchObject({ status: 'succeeded', rows: 250 });
    expect(lines.some((l) => l.msg === 'PostgreSQL is back: the attempt is recorded')).toBe(true);
    const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM ${table}`);
    expect(rows[0].n).toBe(250);
  } finally {
    if (!released) await blocker.end();
    await pool.end();
  }
});
