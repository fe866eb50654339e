/**
 * The migrator: forward-only, safe when several processes run it at once (advisory lock), and carrying history over.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makePool } from '../src/app/connections.ts';
import { silentLogger } from '../src/logger.ts';
import { migrate, readMigrations } from '../src/history/migrate.ts';
import { completeAttempt, failAttempt, insertAttempt } from '../src/history/attempts.ts';
import { DATABASE_URL, uniqueName } from './support/env.ts';

const dbNames = [uniqueName('migrate'), uniqueName('migrate')];
let admin: pg.Client;
beforeAll(async () => {
  admin = new pg.Client({ connectionString: DATABASE_URL });
  admin.on('error', () => undefined);
  await admin.connect();
  for (const db of dbNames) await admin.query(`CREATE DATABASE ${db}`);
});
afterAll(async () => {
  for (const db of dbNames) await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
  await admin.end();
});

function urlOf(db: string): string {
  const url = new URL(DATABASE_URL);
  url.pathname = `/${db}`;
  return url.toString();
}

it('applies every migration exactly once when four processes migrate a fresh database at the same time', async () => {
  // makePool attaches error listeners: DROP DATABASE ... WITH (FORCE) below must not surface as an uncaught error.
  const pools = Array.from({ length: 4 }, () => makePool(silentLogger, urlOf(dbNames[0]!), 2));
  try {
    const applied = await Promise.all(pools.map((p) => migrate(p)));
    const versions = (await readMigrations()).map((m) => m.version);
    // Exactly one process applied the migrations; the others found them done.
    expect(applied.flat().sort((a, b) => a - b)).toEqual(versions);
    expect(applied.filter((a) => a.length > 0)).toHaveLength(1);
    const { rows } = await pools[0]!.query('SELECT version FROM etl.schema_migrations ORDER BY version');
    expect(rows.map((r) => r.version)).toEqual(versions);
    expect(await migrate(pools[0]!)).toEqual([]);
    const tables = await pools[0]!.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'etl' ORDER BY tablename`);
    expect(tables.rows.map((r) => r.tablename)).toEqual(
      expect.arrayContaining(['appended_runs', 'attempts', 'run_errors', 'runs', 'schema_migrations']),
    );
    expect(tables.rows.map((r) => r.tablename)).not.toContain('run_requests');
    expect(tables.rows.map((r) => r.tablename)).not.toContain('zone_rules');
  } finally {
    await Promise.all(pools.map((p) => p.end()));
  }
});

/** One attempt as a 0007 database holds it (etl.runs, keyed by run_id), minutes after `t0`. */
interface OldAttempt {
  job: string;
  runKey: string;
  attempt: number;
  status: 'succeeded' | 'failed' | 'interrupted' | 'running';
  trigger: string;
  startMin: number;
  rows?: number;
  scheduledFor?: Date;
}

it('0008 turns the attempts of a 0007 database into etl.attempts and gives each run key one etl.runs row', async () => {
  const pool = makePool(silentLogger, urlOf(dbNames[1]!), 2);
  try {
    expect(await migrate(pool, silentLogger, { through: 7 })).toEqual([1, 2, 3, 4, 5, 6, 7]);
    const t0 = new Date('2026-01-22T02:15:00Z');
    const at = (min: number) => new Date(t0.getTime() + min * 60_000);
    const tick = at(0);
    const old: OldAttempt[] = [
      // A scheduled tick that failed, then succeeded on its second attempt.
      {
        job: 'orders',
        runKey: 'orders__20260122T021500Z',
        attempt: 1,
        status: 'failed',
        trigger: 'schedule',
        startMin: 0,
        scheduledFor: tick,
      },
      {
        job: 'orders',
        runKey: 'orders__20260122T021500Z',
        attempt: 2,
        status: 'succeeded',
        trigger: 'schedule',
        startMin: 5,
        rows: 42,
        scheduledFor: tick,
      },
      // A foreground run (no request) that failed, and was replayed and failed again.
      { job: 'orders', runKey: 'fg-1', attempt: 1, status: 'failed', trigger: 'manual', startMin: 10 },
      { job: 'orders', runKey: 'fg-1', attempt: 2, status: 'interrupted', trigger: 'replay', startMin: 20 },
      // An append whose second attempt found the rows already appended (succeeded, 0 rows).
      {
        job: 'stock',
        runKey: 'stock__manual',
        attempt: 1,
        status: 'succeeded',
        trigger: 'manual',
        startMin: 30,
        rows: 7,
      },
      {
        job: 'stock',
        runKey: 'stock__manual',
        attempt: 2,
        status: 'succeeded',
        trigger: 'manual',
        startMin: 31,
        rows: 0,
      },
      // The same run key in another job, still running.
      { job: 'stock', runKey: 'fg-1', attempt: 1, status: 'running', trigger: 'manual', startMin: 40 },
    ];
    const ids = old.map(() => randomUUID());
    for (const [i, a] of old.entries()) {
      const finished = a.status === 'running' ? null : at(a.startMin + 1);
      await pool.query(
        `INSERT INTO etl.runs (run_id, job, run_key, scheduled_for, trigger, attempt, status, target_table, write_mode,
                               rows, started_at, finished_at, duration_ms, error)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'erp.t', 'replace', $8, $9, $10, 60000, $11)`,
        [
          ids[i],
          a.job,
          a.runKey,
          a.scheduledFor ?? null,
          a.trigger,
          a.attempt,
          a.status,
          a.rows ?? null,
          at(a.startMin),
          finished,
          a.status === 'failed' ? 'report job failed' : null,
        ],
      );
    }
    await pool.query(
      `INSERT INTO etl.run_errors (run_id, stage, error_kind, retryable, message) VALUES ($1, 'poll', ` +
        `'REPORT_FAILED', false, 'report job failed')`,
      [ids[0]],
    );
    await pool.query(
      `INSERT INTO etl.run_documents (run_id, page, target_table, file_name, content_type, bytes, sha256) VALUES ` +
        `($1, 1, 'erp.t', 'a.pdf', 'application/pdf', 3, 'x')`,
      [ids[1]],
    );
    await pool.query(
      `INSERT INTO etl.appended_runs (job, run_key, run_id, target_table, rows) VALUES ('stock', 'stock__manual', ` +
        `$1, 'erp.t', 7)`,
      [ids[4]],
    );
    await pool.query(`INSERT INTO etl.job_alerts (job, failing_since, failed_run_id) VALUES ('orders', now(), $1)`, [
      ids[2],
    ]);
    const requested = at(-1);
    await pool.query(
      `INSERT INTO etl.run_requests (job, run_key, queue_job_id, trigger, scheduled_for, logical_start, logical_end,
                                     parameters, created_at)
       VALUES ('orders', 'orders__20260122T021500Z', 'orders__20260122T021500Z', 'schedule', $1, $2, $1,
               '{"FROM":"2026-01-21"}', $3),
              ('orders', 'waiting', 'orders__manual_waiting', 'manual', NULL, NULL, $1, NULL, $3)`,
      [tick, at(-1440), requested],
    );

    expect(await migrate(pool, silentLogger, { through: 8 })).toEqual([8]);

    const { rows: runs } = await pool.query('SELECT * FROM etl.runs ORDER BY job, run_key');
    expect(runs).toEqual([
      {
        job: 'orders',
        run_key: 'fg-1',
        trigger: 'manual',
        scheduled_for: null,
        logical_start: null,
        logical_end: null,
        parameters: null,
        queue_job_id: null,
        created_at: at(10),
        attempts: 2,
        status: 'interrupted',
        first_started_at: at(10),
        last_finished_at: at(21),
        rows: null,
      },
      {
        job: 'orders',
        run_key: 'orders__20260122T021500Z',
        trigger: 'schedule',
        scheduled_for: tick,
        logical_start: at(-1440),
        logical_end: tick,
        parameters: { FROM: '2026-01-21' },
        queue_job_id: 'orders__20260122T021500Z',
        created_at: requested,
        attempts: 2,
        status: 'succeeded',
        first_started_at: at(0),
        last_finished_at: at(6),
        rows: '42',
      },
      {
        job: 'orders',
        run_key: 'waiting',
        trigger: 'manual',
        scheduled_for: null,
        logical_start: null,
        logical_end: tick,
        parameters: null,
        queue_job_id: 'orders__manual_waiting',
        created_at: requested,
        attempts: 0,
        status: null,
        first_started_at: null,
        last_finished_at: null,
        rows: null,
      },
      {
        job: 'stock',
        run_key: 'fg-1',
        trigger: 'manual',
        scheduled_for: null,
        logical_start: null,
        logical_end: null,
        parameters: null,
        queue_job_id: null,
        created_at: at(40),
        attempts: 1,
        status: 'running',
        first_started_at: at(40),
        last_finished_at: null,
        rows: null,
      },
      {
        job: 'stock',
        run_key: 'stock__manual',
        trigger: 'manual',
        scheduled_for: null,
        logical_start: null,
        logical_end: null,
        parameters: null,
        queue_job_id: null,
        created_at: at(30),
        attempts: 2,
        status: 'succeeded',
        first_started_at: at(30),
        last_finished_at: at(32),
        rows: '7',
      },
    ]);
    // Every attempt is there under its own id, and what pointed at it by run_id now does by attempt_id.
    const { rows: attempts } = await pool.query('SELECT attempt_id FROM etl.attempts ORDER BY started_at');
    expect(attempts.map((a) => a.attempt_id)).toEqual(ids);
    expect((await pool.query('SELECT attempt_id FROM etl.run_errors')).rows).toEqual([{ attempt_id: ids[0] }]);
    expect((await pool.query('SELECT attempt_id FROM etl.run_documents')).rows).toEqual([{ attempt_id: ids[1] }]);
    expect((await pool.query('SELECT attempt_id FROM etl.appended_runs')).rows).toEqual([{ attempt_id: ids[4] }]);
    expect((await pool.query('SELECT failed_attempt_id FROM etl.job_alerts')).rows).toEqual([
      { failed_attempt_id: ids[2] },
    ]);

    // The migrated history goes on (with the later migrations, which today's statements need): the next attempt of a
    // run is numbered after its old ones, and the run follows it.
    await migrate(pool);
    const next = randomUUID();
    expect(
      await insertAttempt(pool, {
        attemptId: next,
        job: 'orders',
        runKey: 'fg-1',
        trigger: 'replay',
        targetTable: 'erp.t',
        writeMode: 'replace',
        worker: 'test',
      }),
    ).toBe(3);
    expect(await completeAttempt(pool, next, { rows: 5, pages: 1, bytes: 50 })).toBe(true);
    const waiting = randomUUID();
    expect(
      await insertAttempt(pool, {
        attemptId: waiting,
        job: 'orders',
        runKey: 'waiting',
        trigger: 'manual',
        targetTable: 'erp.t',
        writeMode: 'replace',
        worker: 'test',
      }),
    ).toBe(1);
    await failAttempt(pool, waiting, {
      status: 'failed',
      stage: 'start',
      errorKind: 'X',
      retryable: false,
      message: 'x',
    });
    const { rows: after } = await pool.query(
      `SELECT run_key, attempts, status, rows FROM etl.runs WHERE job = 'orders' AND run_key IN ('fg-1', 'waiting') ` +
        `ORDER BY run_key`,
    );
    expect(after).toEqual([
      { run_key: 'fg-1', attempts: 3, status: 'succeeded', rows: '5' },
      { run_key: 'waiting', attempts: 1, status: 'failed', rows: null },
    ]);
  } finally {
    await pool.end();
  }
});
