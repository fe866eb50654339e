/**
 * How kept pages show (docs/operations.md "Kept pages"), over real HTTP with the form login and through the CLI: a
 * run its guard stopped offers no "Replay from kept pages" (it can only trip again) but names `replay
 * --accept-guard`; an attempt that loaded kept pages says it sent nothing and which request made those pages, in
 * `runs --attempts`, on the run and attempt pages and in the failure alert's lines, never a fresh rendering.
 */
import { randomBytes } from 'node:crypto';
import type { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdminServer } from '../src/admin/server.ts';
import { escapeHtml } from '../src/admin/html.ts';
import { resolveJob } from '../src/config/load.ts';
import { readAttemptRequest, requestLines } from '../src/history/attempt-request.ts';
import { getAttempt } from '../src/history/attempts.ts';
import { silentLogger } from '../src/logger.ts';
import { runAttempt } from '../src/pipeline/run-attempt.ts';
import { makeQueue } from '../src/queue/queue.ts';
import { shellQuote } from '../src/shell-quote.ts';
import { adminSessionCookie, adminServerOf } from './support/admin-login.ts';
import { runCli } from './support/cli.ts';
import { uniqueName } from './support/env.ts';
import { attemptFailure, type Harness, jobEntry, startHarness } from './support/harness.ts';

const token = `tok-${randomBytes(12).toString('hex')}`;
const guardJob = uniqueName('kps_guard');
const keptJob = uniqueName('kps_kept');

let h: Harness;
let queue: Queue;
let server: AdminServer;
let cookie: string;
const guardRun = `${uniqueName('kps')} it's`;
const keptRun = uniqueName('kps');
let first = '';
let fromPages = '';

async function attempt(config: ReturnType<Harness['config']>, job: string, request: Record<string, unknown>) {
  return attemptFailure(h.run(config, job, request));
}

beforeAll(async () => {
  h = await startHarness();
  queue = makeQueue(h.redis, uniqueName('kpsq'));
  const config = (rows: string) =>
    h.config({
      [guardJob]: jobEntry(
        { name: 'Sales/Orders', outputType: 'json', paging: 10, parameters: { ROWS: rows } },
        { table: `${h.schema}.kps_guard`, mode: 'replace', guard: { maxShrinkPercent: 50 }, archive: { keepDays: 2 } },
      ),
      [keptJob]: jobEntry(
        { name: 'Sales/Orders', outputType: 'json', paging: 100, parameters: { ROWS: rows } },
        { table: `${h.schema}.kps_kept`, schemaChanges: 'freeze', archive: { keepDays: 2 } },
      ),
    });
  // A guard trip with its pages kept: 400 rows loaded, then a run of 12.
  await runAttempt({ job: resolveJob(config('400'), guardJob), pool: h.pool, redis: h.redis, logger: silentLogger });
  expect((await attempt(config('12'), guardJob, { runKey: guardRun })).code).toBe('GUARD_TRIPPED');

  // A frozen table the report does not fit: attempt 1 (ROWS=100) keeps its pages and fails; attempt 2 loads them
  // while the job now says ROWS=1000, and fails the same way.
  await h.pool.query(`CREATE TABLE ${h.schema}.kps_kept (other text)`);
  first = (await attempt(config('100'), keptJob, { runKey: keptRun })).attemptId;
  const second = await attempt(config('1000'), keptJob, { runKey: keptRun, pagesOf: first, trigger: 'replay' });
  expect(second.code).toBe('SCHEMA_CHANGED');
  fromPages = second.attemptId;

  server = await adminServerOf(h, queue, { auth: { token }, config: config('1000') });
  cookie = await adminSessionCookie(server.url, token);
}, 120_000);

afterAll(async () => {
  await server?.close();
  await queue?.obliterate({ force: true }).catch(() => undefined);
  await queue?.close();
  await h?.pool.query('DELETE FROM etl.runs WHERE job = ANY($1)', [[guardJob, keptJob]]);
  await h?.close();
});

const get = async (path: string) => (await fetch(`${server.url}${path}`, { headers: { cookie } })).text();
const sentNothing = () =>
  `sent nothing: loaded the kept pages of attempt ${first} (which sent 7777 Sales/Orders json/100 ROWS=100)`;

describe('kept pages as shown', () => {
  it('a run its guard stopped offers no Replay from kept pages, and names replay --accept-guard', async () => {
    const runPage = await get(`/admin/runs/${guardJob}/${encodeURIComponent(guardRun)}`);
    expect(runPage).toContain('id="replay-advice"');
    expect(runPage).not.toContain('replay-from-pages');
    expect(runPage).toContain(`<code>${escapeHtml(`report-etl replay ${shellQuote(guardRun)} --accept-guard`)}</code>`);
    expect(shellQuote(guardRun)).toMatch(/^'.*'$/);
    // Other failures with kept pages still offer the button.
    expect(await get(`/admin/runs/${keptJob}/${keptRun}`)).toContain('id="replay-from-pages"');
  });

  it('an attempt that loaded kept pages records and shows the request those pages came from', async () => {
    const stored = readAttemptRequest((await getAttempt(h.pool, fromPages))!.request)!;
    expect(stored.pagesFrom).toBe(first);
    expect(stored.report?.parameters).toEqual({ ROWS: '100' });
    expect(requestLines(stored, (t) => t.toISOString())).toContain(sentNothing());

    const runPage = await get(`/admin/runs/${keptJob}/${keptRun}`);
    expect(runPage).toContain('What attempt 2 sent');
    expect(runPage).toContain(`class="pages-from">S${escapeHtml(sentNothing().slice(1))}.</p>`);
    expect(runPage).not.toContain('ROWS=1000');
    expect(await get(`/admin/attempts/${fromPages}`)).toContain(escapeHtml(sentNothing().slice(1)));

    const cli = await runCli(['runs', '--attempts', '--job', keptJob, '--config', '/nonexistent/jobs.yaml']);
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toContain(sentNothing());
    expect(cli.stdout).not.toContain('ROWS=1000');
    expect(cli.stdout).toContain('7777 Sales/Orders json/100 ROWS=100');
  });
});
