/**
 * What `report-etl runs` prints and refuses: a hostile server's text reaches a terminal without control characters
 * (terminalSafe() itself, and an attempt whose recorded error carries escape sequences; the history keeps them
 * unchanged), an unknown status is refused with the allowed ones, and a job the history never saw gets a did-you-mean;
 * `--failed` is `--status failed`.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makePool } from '../src/app/connections.ts';
import { failAttempt } from '../src/history/attempts.ts';
import { migrate } from '../src/history/migrate.ts';
import { silentLogger } from '../src/logger.ts';
import { terminalSafe } from '../src/terminal-text.ts';
import { runCli } from './support/cli-process.ts';
import { DATABASE_URL, uniqueName } from './support/env.ts';
import { insertTestAttempt } from './support/queue-env.ts';

const pool = makePool(silentLogger, DATABASE_URL, 2);
const job = uniqueName('esc');

beforeAll(async () => {
  await migrate(pool);
});
afterAll(async () => {
  await pool.query('DELETE FROM etl.attempts WHERE job = $1', [job]).catch(() => undefined);
  await pool.query('DELETE FROM etl.runs WHERE job = $1', [job]).catch(() => undefined);
  await pool.end();
});

it('removes escape sequences and control characters, keeping line breaks, tabs and every other character', () => {
  expect(terminalSafe('a\u001b[2J\u001b[31mred\u001b[0m b')).toBe('ared b');
  expect(terminalSafe('\u001b]0;owned\u0007title')).toBe('title');
  expect(terminalSafe('bell\u0007 back\b space\u007f c1\u009b')).toBe('bell back space c1');
  expect(terminalSafe('line 1\r\nline 2\n\tline 3 äöü €')).toBe('line 1\nline 2\n\tline 3 äöü €');
});

it('report-etl runs prints a recorded server text with escapes as plain text; the history keeps it whole', async () => {
  const attemptId = randomUUID();
  const hostile = 'Report execution failed:\u001b[2J\u001b]0;pwned\u0007 Division by zero';
  await insertTestAttempt(pool, { attemptId, job, worker: 'test:1' });
  await failAttempt(pool, attemptId, {
    status: 'failed',
    stage: 'poll',
    errorKind: 'REPORT_FAILED',
    retryable: false,
    message: hostile,
    serverMessage: hostile,
  });
  const r = await runCli(['runs', '--job', job, '--attempts']);
  expect(r.code).toBe(0);
  expect(r.stdout).toContain('Report execution failed: Division by zero');
  // eslint-disable-next-line no-control-regex -- the test looks for control characters
  expect(r.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
  const { rows } = await pool.query('SELECT message FROM etl.run_errors WHERE attempt_id = $1', [attemptId]);
  expect(rows[0].message).toBe(hostile);
});

it(
  'report-etl runs refuses a status it does not know, listing the allowed ones, ' + 'and suggests a job for a typo',
  async () => {
    const bad = await runCli(['runs', '--status', 'failure']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      "argument 'failure' is invalid. Allowed choices are running, succeeded, failed, interrupted.",
    );
    const typo = await runCli(['runs', '--job', `${job}x`]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain(`no job "${job}x" in the run history (did you mean "${job}"?`);
    const ok = await runCli(['runs', '--job', job, '--status', 'succeeded']);
    expect(ok.code).toBe(0);
    expect(ok.stdout.trim()).toBe('no runs');
  },
);

it('report-etl runs --failed lists the failed runs as --status failed does (as replay --failed)', async () => {
  const failed = await runCli(['runs', '--job', job, '--failed']);
  expect(failed.code).toBe(0);
  expect(failed.stdout).toContain('Report execution failed: Division by zero');
  const none = await runCli(['runs', '--job', job, '--failed', '--attempts', '--since', '2099-01-01']);
  expect(none.code).toBe(0);
  expect(none.stdout.trim()).toBe('no attempts');
  const both = await runCli(['runs', '--failed', '--status', 'succeeded']);
  expect(both.code).toBe(2);
  expect(both.stderr).toContain("option '--failed' cannot be used with option '--status <status>'");
});
