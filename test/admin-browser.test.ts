/**
 * The admin pages in a real headless Chromium: a run of the simulator's 'Failing' report
 * fails, the run history page shows the server's multi-line text, and clicking Replay re-queues the same logical
 * run. Chromium (a system one, else the npm package's: test/support/browser.ts) is driven by playwright-core.
 * Screenshots go to /tmp/report-etl-admin-*.png.
 */
import { randomBytes } from 'node:crypto';
import type { BrowserContext } from 'playwright-core';
import { launchBrowser, type TestBrowser } from './support/browser.ts';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AdminServer } from '../src/admin/server.ts';
import { makeQueue, type RunQueue } from '../src/queue/queue.ts';
import { FAILING_MESSAGE } from '../src/simulator/catalogue.ts';
import { testPrefix, uniqueName } from './support/env.ts';
import { attemptFailure, type Harness, jobEntry, startHarness } from './support/harness.ts';
import { logInInBrowser, adminServerOf } from './support/admin-login.ts';

const SCREENSHOT_RUN = '/tmp/report-etl-admin-run.png';
const SCREENSHOT_REPLAYED = '/tmp/report-etl-admin-replayed.png';
const token = `tok-${randomBytes(12).toString('hex')}`;
const job = uniqueName('adm_browser');

let h: Harness;
let queue: RunQueue;
let server: AdminServer;
let context: BrowserContext | undefined;
let browser: TestBrowser | undefined;
let failedAttemptId: string;

beforeAll(async () => {
  h = await startHarness();
  queue = makeQueue(h.redis, testPrefix('admbq'));
  const config = h.config({
    [job]: jobEntry({ name: 'Failing', outputType: 'json' }, { table: `${h.schema}.failing` }),
  });
  const err = await attemptFailure(h.run(config, job));
  failedAttemptId = err.attemptId;
  server = await adminServerOf(h, queue, { auth: { token } });
  browser = await launchBrowser();
  context = browser.context;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await queue?.obliterate({ force: true }).catch(() => undefined);
  await queue?.close();
  await h?.pool.query('DELETE FROM etl.runs WHERE job = $1', [job]);
  await h?.close();
});

it("shows a failed run with the server's text and replays it by clicking", async () => {
  const page = await context!.newPage();
  const visited: string[] = [];
  page.on('request', (r) => visited.push(r.url()));
  // An admin page without a session shows the login form (a 401); a wrong token says so and keeps the form.
  const refused = await page.goto(`${server.url}/admin/runs`);
  expect(refused?.status()).toBe(401);
  expect(await page.locator('#login-notice').textContent()).toBe('Log in to see the admin pages.');
  expect(await page.locator('#logout').count()).toBe(0);
  await page.locator('#token').fill(`${token}x`);
  await Promise.all([page.waitForLoadState(), page.locator('#login button').click()]);
  await expect.poll(() => page.locator('#login-notice').textContent()).toContain('Wrong token');
  await page.screenshot({ path: '/tmp/report-etl-admin-login.png', fullPage: true });
  // The form sets the session cookie and lands on the run list; the token is in no URL the browser visited.
  await logInInBrowser(page, server.url, token);
  expect(new URL(page.url()).pathname).toBe('/admin/runs');

  await page.goto(`${server.url}/admin/runs?job=${encodeURIComponent(job)}&status=failed`);
  const row = page.locator('tbody tr');
  await expect.poll(() => row.count()).toBe(1);
  expect(await row.locator('.s-failed').textContent()).toBe('failed');
  expect(await row.locator('td').last().textContent()).toContain(FAILING_MESSAGE.split('\n')[0]!);

  // The run (a foreground run: its run key is its first attempt's id), then its attempt.
  await row.locator(`a[href="/admin/runs/${job}/${failedAttemptId}"]`).click();
  await page.waitForURL(`**/admin/runs/${job}/${failedAttemptId}`);
  expect(await page.locator('dd.attempts').textContent()).toBe('1');
  await page.locator(`#attempts a[href="/admin/attempts/${failedAttemptId}"]`).click();
  await page.waitForURL(`**/admin/attempts/${failedAttemptId}`);
  // The server's words, every line, exactly as it sent them.
  expect(await page.locator('pre.server-message').textContent()).toBe(FAILING_MESSAGE);
  const rendered = await page.locator('pre.server-message').innerText();
  expect(rendered.split('\n')).toEqual(FAILING_MESSAGE.split('\n'));
  await page.screenshot({ path: SCREENSHOT_RUN, fullPage: true });

  const { rows } = await h.pool.query<{ run_key: string }>('SELECT run_key FROM etl.attempts WHERE attempt_id = $1', [
    failedAttemptId,
  ]);
  expect(await queue.getJobCounts('waiting', 'prioritized')).toEqual({ waiting: 0, prioritized: 0 });
  await page.locator('button#replay').click();
  await page.waitForURL((u) => u.searchParams.has('replayed'));
  // The replay is the run's: back on the run's page.
  expect(new URL(page.url()).pathname).toBe(`/admin/runs/${job}/${failedAttemptId}`);
  const jobId = new URL(page.url()).searchParams.get('replayed')!;
  expect(await page.locator('.notice').textContent()).toBe(`Replay queued as job ${jobId}.`);
  await page.screenshot({ path: SCREENSHOT_REPLAYED, fullPage: true });

  const queued = await queue.getJob(jobId);
  expect(queued?.data).toMatchObject({ job, runKey: rows[0]!.run_key, trigger: 'replay' });
  // A replay waits behind scheduled runs (queued with the backfill priority).
  expect(await queued!.getState()).toBe('prioritized');
  expect(await queue.getJobCounts('waiting', 'prioritized')).toEqual({ waiting: 0, prioritized: 1 });

  // bull-board (a script-driven page) lists the replayed job in the same browser session.
  await page.goto(`${server.url}/admin/queues/queue/report-etl?status=prioritized`);
  await expect.poll(() => page.getByText(jobId).count(), { timeout: 15_000 }).toBeGreaterThan(0);
  // A visible way back to report-etl's pages, and times with their UTC offset (GMT, GMT+1…), not the browser's zone.
  expect(await page.locator('#report-etl-back').isVisible()).toBe(true);
  expect(await page.locator('#report-etl-back').getAttribute('href')).toBe('/admin');
  await expect.poll(() => page.getByText(/\bGMT([+-]\d+)?\b/).count(), { timeout: 15_000 }).toBeGreaterThan(0);
  await page.screenshot({ path: '/tmp/report-etl-admin-bull-board.png', fullPage: true });
  await page.locator('#report-etl-back').click();
  await page.waitForURL((u) => u.pathname === '/admin' || u.pathname === '/admin/runs');

  // Log out, from any page: the login form says so, and the pages ask for a login again.
  await page.goto(`${server.url}/admin/runs/${job}/${failedAttemptId}`);
  await Promise.all([page.waitForURL('**/admin/login?loggedOut'), page.locator('#logout').click()]);
  expect(await page.locator('#login-notice').textContent()).toContain('Logged out');
  expect((await page.goto(`${server.url}/admin/runs`))?.status()).toBe(401);
  expect(visited.filter((u) => u.includes(token))).toEqual([]);
}, 60_000);
