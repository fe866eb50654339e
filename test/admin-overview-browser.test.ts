/**
 * The jobs overview in a real headless Chromium: one line per job with its state (healthy, failing now,
 * stale, invalid config), last run, last success, next tick and server-side SVG sparklines; a failure superseded by
 * a later success shown as such; Replay on the failing job's last failure; the run list with the whole first line of
 * the server's own message. Screenshots: /tmp/report-etl-overview*.png.
 */
import { randomBytes } from 'node:crypto';
import type { BrowserContext, Page } from 'playwright-core';
import { launchBrowser, type TestBrowser } from './support/browser.ts';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AdminServer } from '../src/admin/server.ts';
import { settableConfig } from '../src/config/live-config.ts';
import { makeQueue, type RunQueue } from '../src/queue/queue.ts';
import { FAILING_MESSAGE } from '../src/simulator/catalogue.ts';
import { summaryLine } from '../src/failure-text.ts';
import { uniqueName } from './support/env.ts';
import { jobEntry, startHarness, type Harness } from './support/harness.ts';
import { deleteRuns, insertTestAttempt } from './support/queue-env.ts';
import { logInInBrowser, adminServerOf } from './support/admin-login.ts';
import { failAttempt } from '../src/history/attempts.ts';

const token = `tok-${randomBytes(12).toString('hex')}`;
const jp = uniqueName('ovw');
let h: Harness;
let queue: RunQueue;
let server: AdminServer;
let context: BrowserContext | undefined;
let browser: TestBrowser | undefined;
// The server's first meaningful line: the heading and the line it introduces.
const firstServerLine = summaryLine(FAILING_MESSAGE);

beforeAll(async () => {
  h = await startHarness();
  queue = makeQueue(h.redis, uniqueName('ovwq'));
  const ok = (rows: string) =>
    jobEntry({ name: 'Sales/Orders', parameters: { ROWS: rows } }, { table: `${h.schema}.ok_${rows}` });
  const failing = jobEntry({ name: 'Failing' }, { table: `${h.schema}.failing` });
  const run = async (config: ReturnType<Harness['config']>, job: string) => h.run(config, job).catch(() => undefined);
  // healthy: five successes of growing size; failing: a success, then failures; superseded: a failure, then a later
  // success into the same replace target; appended: the same in append mode, which nothing supersedes.
  const into = (entry: Record<string, unknown>, table: string, mode: string) => ({
    ...entry,
    target: { table: `${h.schema}.${table}`, mode },
  });
  const first = h.config({
    [`${jp}_healthy`]: { ...ok('100'), schedule: '15 2 * * *' },
    [`${jp}_failing`]: ok('50'),
    [`${jp}_superseded`]: into(failing, 'superseded', 'replace'),
    [`${jp}_appended`]: into(failing, 'appended', 'append'),
    [`${jp}_stale`]: { ...ok('30'), freshness: '1s' },
  });
  for (const rows of ['100', '300', '200', '400', '500'])
    await run(h.config({ [`${jp}_healthy`]: ok(rows) }), `${jp}_healthy`);
  await run(first, `${jp}_failing`);
  await run(first, `${jp}_superseded`);
  await run(first, `${jp}_appended`);
  await run(first, `${jp}_stale`);
  const now = h.config({
    [`${jp}_healthy`]: { ...ok('100'), schedule: '15 2 * * *' },
    [`${jp}_failing`]: failing,
    [`${jp}_superseded`]: into(ok('60'), 'superseded', 'replace'),
    [`${jp}_appended`]: into(ok('60'), 'appended', 'append'),
    [`${jp}_stale`]: { ...ok('30'), freshness: '1s' },
  });
  await run(now, `${jp}_failing`);
  await run(now, `${jp}_failing`);
  await run(now, `${jp}_superseded`);
  await run(now, `${jp}_appended`);
  // The stale job's success is made an hour old (its freshness is 1 s), rather than waiting for the clock.
  await h.pool.query(
    `UPDATE etl.attempts SET started_at = started_at - interval '1 hour', finished_at = finished_at - ` +
      `interval '1 hour' WHERE job = $1`,
    [`${jp}_stale`],
  );
  const invalid = [
    {
      kind: 'job' as const,
      name: `${jp}_invalid`,
      problems: [
        'jobs.yaml:40:13: jobs.x.report.name: report name "Sales-Orders" has characters the ' +
          'server rejects (fix report.name)',
      ],
      schedule: '0 6 * * *',
    },
  ];
  server = await adminServerOf(h, queue, { auth: { token }, liveConfig: settableConfig(now, invalid) });
  browser = await launchBrowser();
  context = browser.context;
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await queue?.obliterate({ force: true }).catch(() => undefined);
  await queue?.close();
  if (h) await deleteRuns(h.pool, jp);
  await h?.close();
});

it('shows every job with its state, sparklines and a Replay on the failing one', async () => {
  const page = await context!.newPage();
  await logInInBrowser(page, server.url, token);
  expect(new URL(page.url()).pathname).toBe('/admin');
  const line = (job: string) => page.locator(`tr[data-job="${jp}_${job}"]`);
  expect(await line('healthy').locator('.state').textContent()).toBe('healthy');
  expect(await line('failing').locator('.state').textContent()).toBe('failing now');
  expect(await line('stale').locator('.state').first().textContent()).toBe('stale');
  expect(await line('invalid').locator('.state').textContent()).toBe('invalid config');
  expect(await line('invalid').locator('ul.problems').textContent()).toContain('jobs.yaml:40:13');
  // A scheduled job that is invalid is not run by the scheduler: its schedule shows, and that it is paused.
  expect(await line('invalid').locator('td.next-tick').textContent()).toBe('paused while invalid0 6 * * *');
  expect(await line('superseded').locator('.state').textContent()).toBe('healthy');
  expect(await line('superseded').locator('.superseded').textContent()).toMatch(
    /^last failure .* superseded by the success of the later run \S+$/,
  );
  // An append failure is never superseded (the same rule as replay --failed): its rows are its own.
  expect(await line('appended').locator('.state').textContent()).toBe('healthy');
  expect(await line('appended').locator('.superseded').count()).toBe(0);
  // Next tick of "15 2 * * *" in Europe/Zurich (the connection's zone), shown in that zone with its offset.
  expect(await line('healthy').locator('td.next-tick').textContent()).toMatch(/^\d{4}-\d\d-\d\d 02:15:00\+0[12]:00/);
  // The job's other times are in its zone too: the last success's start, with the zone's offset.
  expect(await line('healthy').locator('td.last-success').textContent()).toMatch(
    /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+0[12]:00$/,
  );
  // Sparklines: server-drawn SVG, 5 points for 5 attempts, a red dot per failed attempt.
  expect(await line('healthy').locator('td.spark-rows svg circle').count()).toBe(5);
  expect(await line('healthy').locator('td.spark-rows svg title').textContent()).toBe(
    'rows of the last 5 attempts; last 500',
  );
  expect(await line('failing').locator('td.spark-rows svg circle[fill="#cf222e"]').count()).toBe(2);
  expect(await line('failing').locator('.error-line').textContent()).toBe(firstServerLine);
  await page.screenshot({ path: '/tmp/report-etl-overview.png', fullPage: true });

  await line('failing').locator('button.replay').click();
  await page.waitForURL((u) => u.searchParams.has('replayed'));
  const jobId = new URL(page.url()).searchParams.get('replayed')!;
  expect((await queue.getJob(jobId))?.data).toMatchObject({ job: `${jp}_failing`, trigger: 'replay' });

  await page.goto(`${server.url}/admin/runs?job=${encodeURIComponent(`${jp}_failing`)}&status=failed`);
  const cells = page.locator('tbody tr td:last-child');
  expect(await cells.count()).toBe(2);
  expect(await cells.first().textContent()).toBe(firstServerLine);
  await page.screenshot({ path: '/tmp/report-etl-overview-runs.png', fullPage: true });
}, 60_000);

/** The cells whose text is a name or an id, by page of the test below: the job names, attempt ids and workers. */
const NAME_CELLS: Record<string, string> = {
  overview: 'table.overview tbody td:first-child > a',
  run: '#attempts tbody td:nth-child(2) > a, #attempts tbody td:nth-child(8)',
  'long-run': '#attempts tbody td:nth-child(2) > a, #attempts tbody td:nth-child(8)',
};

/** The number of lines the text of each element matched by `selector` takes (one client rect top per line). */
async function linesOf(page: Page, selector: string): Promise<{ text: string; lines: number }[]> {
  // A string, as the page's other evaluations: the tests are compiled without the DOM's types.
  return (await page.evaluate(`[...document.querySelectorAll(${JSON.stringify(selector)})].map((e) => {
    const range = document.createRange();
    range.selectNodeContents(e);
    const tops = [...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top));
    return { text: e.textContent, lines: new Set(tops).size };
  })`)) as { text: string; lines: number }[];
}

it(
  'the overview, the run list, run and attempt pages (long run keys) and the connections fit a 420 px phone and a ' +
    '1400 px screen without sideways scrolling',
  async () => {
    const page = await context!.newPage();
    await logInInBrowser(page, server.url, token);
    const { rows } = await h.pool.query<{ run_key: string }>(
      'SELECT run_key FROM etl.runs WHERE job = $1 ORDER BY first_started_at DESC LIMIT 1',
      [`${jp}_failing`],
    );
    // A run key of a scheduled run is one long word: it must wrap in the page's heading.
    const longKey = `${jp}_failing__2026-11-25T02:15:00.000Z__replay_of_${'0123456789abcdef'.repeat(4)}`;
    const longAttempt = crypto.randomUUID();
    await insertTestAttempt(h.pool, {
      attemptId: longAttempt,
      job: `${jp}_failing`,
      runKey: longKey,
      trigger: 'schedule',
      targetTable: `${h.schema}.failing_table_with_a_long_name_for_the_narrow_screen`,
    });
    await failAttempt(h.pool, longAttempt, {
      status: 'failed',
      stage: 'poll',
      errorKind: 'REPORT_FAILED',
      retryable: false,
      // A long word, and many words: the message's column would take the width of the job names' column.
      message: `report job failed: ${'a_long_word_without_spaces_'.repeat(8)} ${'and many more words '.repeat(40)}`,
    });
    const pages = {
      overview: '/admin',
      runs: `/admin/runs?job=${encodeURIComponent(`${jp}_failing`)}`,
      run: `/admin/runs/${jp}_failing/${rows[0]!.run_key}`,
      'long-run': `/admin/runs/${jp}_failing/${encodeURIComponent(longKey)}`,
      attempt: `/admin/attempts/${longAttempt}`,
      connections: '/admin/connections',
    };
    const broken: { page: string; text: string; lines: number }[] = [];
    for (const width of [420, 1400]) {
      await page.setViewportSize({ width, height: 900 });
      for (const [name, path] of Object.entries(pages)) {
        expect((await page.goto(`${server.url}${path}`))?.status(), path).toBe(200);
        const { scroll, client } = (await page.evaluate(
          '({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })',
        )) as { scroll: number; client: number };
        await page.screenshot({ path: `/tmp/report-etl-${name}-${width}.png`, fullPage: true });
        expect({ page: name, width, scroll }).toEqual({ page: name, width, scroll: client });
        // On a wide screen job names, attempt ids and worker names are whole: each on one line, never cut mid-word.
        const names = NAME_CELLS[name];
        if (width === 1400 && names) {
          const lines = await linesOf(page, names);
          expect(lines.length, name).toBeGreaterThan(0);
          broken.push(...lines.filter((l) => l.lines !== 1).map((l) => ({ page: name, ...l })));
        }
      }
    }
    expect(broken).toEqual([]);
    // At 420 px every job's state and its link to its runs are still on the screen.
    await page.setViewportSize({ width: 420, height: 900 });
    await page.goto(`${server.url}/admin`);
    expect(await page.locator(`tr[data-job="${jp}_failing"] .state`).isVisible()).toBe(true);
  },
  60_000,
);
