/**
 * A command whose PostgreSQL session ends while it runs (a restart, pg_terminate_backend) says so in one line and exits
 * 2, as when PostgreSQL does not answer at its start (README "Commands"), instead of a stack trace.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it, vi } from 'vitest';
import { pagesConnectionName } from '../src/history/page-archive.ts';
import { runCli } from './support/cli.ts';
import { DATABASE_URL, uniqueName } from './support/env.ts';
import { jobEntry, useHarness } from './support/harness.ts';

const h = useHarness();

describe('a connection lost while a command runs', () => {
  it('report-etl pages: one line saying the connection was lost, exit 2, no stack trace', async () => {
    const config = h.config({
      c: jobEntry(
        { name: 'Sales/Orders', outputType: 'json', paging: 10, parameters: { ROWS: '25' } },
        { table: `${h.schema}.connection_lost`, mode: 'replace', archive: { keepDays: 1 } },
      ),
    });
    const { attemptId } = await h.run(config, 'c', { runKey: uniqueName('c') });
    const out = mkdtempSync(join(tmpdir(), 'connection-lost-'));
    // The command's reading of the chunks waits behind a lock (held for this moment only: other files' kept pages
    // wait for it too), and its session is then ended, as a restart of PostgreSQL ends it.
    const locker = new pg.Client({ connectionString: DATABASE_URL });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE etl.attempt_page_chunks IN ACCESS EXCLUSIVE MODE');
      const lockPid = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const command = runCli(['pages', attemptId, '--out', out], { env: { LOG_LEVEL: 'warn' } });
      await vi.waitFor(
        async () => {
          const { rows } = await h.pool.query<{ ended: boolean }>(
            `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
              WHERE application_name = $2 AND $1 = ANY(pg_blocking_pids(pid))`,
            [lockPid, pagesConnectionName(attemptId)],
          );
          expect(rows.map((r) => r.ended)).toEqual([true]);
        },
        { timeout: 30_000, interval: 50 },
      );
      await locker.query('ROLLBACK');
      const r = await command;
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain('report-etl: the connection to PostgreSQL or Redis was lost: ');
      expect(r.stderr).toContain('run the command again once they answer');
      expect(r.stderr).not.toMatch(/\n\s+at /);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
      rmSync(out, { recursive: true, force: true });
    }
  });
});
