/**
 * "Where the time went" on the run and attempt pages, in a real headless Chromium (test/support/browser.ts): a 1-page
 * run, and a 50-page run whose first attempt was interrupted mid-load and whose second succeeded, each drawn on
 * its own time axis — slot wait, token, start, the server's rendering, each page's fetch and reading with rows and
 * bytes in its tooltip, COPY, commit, the report job's DELETE —, with a legend and a line per attempt saying how
 * much the server, the network, the database and decoding took; on a wide screen and a phone (no sideways
 * scrolling). Screenshots go to /tmp/report-etl-timeline-*.png.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AdminServer } from '../src/admin/server.ts';
import { makeQueue, type RunQueue } from '../src/queue/queue.ts';
import { launchBrowser, type TestBrowser } from './support/browser.ts';
import { uniqueName } from './support/env.ts';
import { attemptFailure, jobEntry, useHarness } from './support/harness.ts';
import { logInInBrowser, adminServerOf } from './support/admin-login.ts';

const token = `tok-${randomBytes(12).toString('hex')}`;
const small = uniqueName('tl_small');
const big = uniqueName('tl_big');
const bigRunKey = `${big}__retried`;

// Some latency per answer, so that the server's and the network's share is visible as it is on a real server.
const h = useHarness({ jobDurationMs: 150, faults: { latencyMs: 8 } });
let queue: RunQueue;
let server: AdminServer;
let browser: TestBrowser | undefined;
let context: BrowserContext;
let smallAttemptId: string;

/** A logger that aborts the attempt once page `page` is loaded. */
function abortAtPage(controller: AbortController, page: number) {
  return pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString().split('\n')) {
          if (line.includes('"msg":"page loaded"') && (JSON.parse(line) as { page: number }).page === page)
            controller.abort(new Error('test: stop mid-load'));
        }
        done();
      },
    }),
  );
}

beforeAll(async () => {
  queue = makeQueue(h.redis, uniqueName('tlq'));
  const config = h.config({
    [small]: jobEntry(
      { name: 'Sales/Orders', outputType: 'json', paging: 100, parameters: { ROWS: '80' } },
      { table: `${h.schema}.small` },
    ),
    [big]: jobEntry(
      { name: 'Sales/Orders', outputType: 'txt', paging: 100, parameters: { ROWS: '5000' } },
      { table: `${h.schema}.big` },
    ),
  });
  smallAttemptId = (await h.run(config, small)).attemptId;
  // The 50-page run: its first attempt interrupted at page 20, its second loads all 50 pages.
  const controller = new AbortController();
  const request = { runKey: bigRunKey, trigger: 'manual' as const };
  await attemptFailure(h.run(config, big, request, { logger: abortAtPage(controller, 20), signal: controller.signal }));
  await h.run(config, big, request);
  server = await adminServerOf(h, queue, { auth: { token } });
  browser = await launchBrowser();
  context = browser.context;
  const login = await context.newPage();
  await logInInBrowser(login, server.url, token);
  await login.close();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await queue?.obliterate({ force: true }).catch(() => undefined);
  await queue?.close();
  await h.pool.query('DELETE FROM etl.runs WHERE job IN ($1, $2)', [small, big]);
});

/** Opens `path` at `width` px; checks nothing is wider than the screen. */
async function open(path: string, width: number): Promise<Page> {
  const page = await context.newPage();
  await page.setViewportSize({ width, height: 900 });
  const res = await page.goto(`${server.url}${path}`);
  expect(res?.status()).toBe(200);
  const { scroll, client } = (await page.evaluate(
    '({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })',
  )) as { scroll: number; client: number };
  expect(scroll).toBeLessThanOrEqual(client);
  return page;
}

/** The tooltips of the bars of the chart, by kind. */
async function tooltips(page: Page, selector: string): Promise<string[]> {
  return page.locator(`.timeline ${selector} > title`).allTextContents();
}

it(
  'a 1-page run: every step on one axis, the page with its rows and bytes, ' + 'a legend, where its time went',
  async () => {
    const { rows } = await h.pool.query<{ run_key: string }>('SELECT run_key FROM etl.attempts WHERE attempt_id = $1', [
      smallAttemptId,
    ]);
    for (const width of [1400, 420]) {
      const page = await open(`/admin/runs/${small}/${rows[0]!.run_key}`, width);
      await page.locator('#timeline').scrollIntoViewIfNeeded();
      await page.screenshot({ path: `/tmp/report-etl-timeline-1-page-${width}.png`, fullPage: true });
      await page.locator('.timeline').screenshot({ path: `/tmp/report-etl-timeline-1-page-${width}-chart.png` });
      const steps = await tooltips(page, 'rect');
      for (const step of ['slot wait', 'record', 'token', 'start', 'render', 'load', 'COPY', 'commit', 'DELETE job']) {
        expect(
          steps.some((t) => t.startsWith(`${step}:`)),
          step,
        ).toBe(true);
      }
      expect(steps.find((t) => t.startsWith('render:'))).toMatch(/\d+ status polls?; the server says it rendered for/);
      const pages = await tooltips(page, 'g.tl-page');
      expect(pages).toHaveLength(1);
      expect(pages[0]).toMatch(
        new RegExp(
          /^page 1: 80 rows, [\d.]+ KiB\. Requested \+[\d.]+ m?s, answered after .*; read .* /.source +
            /waiting for the server's bytes, .* decoding, .* waiting for COPY \(PostgreSQL\)\.$/.source,
        ),
      );
      expect(await page.locator('.tl-legend').innerText()).toMatch(
        /server[\s\S]*page answer[\s\S]*network[\s\S]*decoding[\s\S]*database[\s\S]*slot wait/,
      );
      expect(await page.locator('.tl-spent').innerText()).toMatch(
        /^From its slot wait to its DELETE, [\d.]+ m?s: .*server .*database /,
      );
      // Label and bar columns stay row for row together.
      const heights = await page
        .locator('.tl-grid-wrap svg.tl-labels, .tl-grid-wrap svg.tl-bars')
        .evaluateAll((svgs) => svgs.map((s) => s.getBoundingClientRect().height));
      expect(heights[0]).toBe(heights[1]);
      await page.close();
    }
  },
);

it(
  'a 50-page run retried: each attempt on its own axis, pages fetched one ahead, ' +
    'the interrupted one marked where it failed',
  async () => {
    for (const width of [1400, 420]) {
      const page = await open(`/admin/runs/${big}/${bigRunKey}`, width);
      await page.locator('#timeline').scrollIntoViewIfNeeded();
      await page.screenshot({ path: `/tmp/report-etl-timeline-50-pages-${width}.png`, fullPage: true });
      await page.locator('.timeline').screenshot({ path: `/tmp/report-etl-timeline-50-pages-${width}-chart.png` });
      const heads = await page.locator('.tl-head').allInnerTexts();
      expect(heads).toHaveLength(2);
      expect(heads[0]).toMatch(/^Attempt 1 interrupted started /);
      expect(heads[1]).toMatch(/^Attempt 2 succeeded started /);
      const pages = await tooltips(page, 'g.tl-page');
      // 20 pages read by the first attempt (the 21st, fetched ahead, was never read), 50 by the second.
      expect(pages.filter((t) => t.startsWith('page 1:'))).toHaveLength(2);
      expect(pages.filter((t) => t.startsWith('page 50: 100 rows'))).toHaveLength(1);
      expect(pages.length).toBeGreaterThanOrEqual(70);
      expect(await page.locator('.timeline g.tl-page.tl-failed, .timeline rect.tl-failed').count()).toBeGreaterThan(0);
      // Each attempt on its own axis: each begins near its left edge (within 2 % of it; on one axis for the run the
      // second began after the first had ended), with its own ticks under it.
      const x = await page
        .locator('.tl-bars')
        .evaluateAll((svgs) =>
          svgs.map((s) =>
            Math.min(...[...s.querySelectorAll('rect:not(.tl-grid)')].map((r) => Number(r.getAttribute('x')))),
          ),
        );
      expect(x).toHaveLength(2);
      for (const left of x) expect(left).toBeLessThan(20);
      expect(await page.locator('.tl-grid-wrap svg.tl-axis').count()).toBe(2);
      await page.close();
    }
    // Without its timeline (as when its process was killed and the janitor closed it), the interrupted attempt says
    // what it had recorded and where it stopped.
    await h.pool.query('UPDATE etl.attempts SET timeline = NULL WHERE job = $1 AND attempt = 1', [big]);
    for (const width of [1400, 420]) {
      const page = await open(`/admin/runs/${big}/${bigRunKey}`, width);
      await page.locator('#timeline').scrollIntoViewIfNeeded();
      await page.locator('.timeline').screenshot({ path: `/tmp/report-etl-timeline-stopped-${width}-chart.png` });
      expect(await page.locator('.tl-done').innerText()).toMatch(
        /^Done before it stopped: 20 pages read; nothing committed; it stopped after starting its report job/,
      );
      expect(Number(await page.evaluate('document.documentElement.scrollWidth'))).toBeLessThanOrEqual(width);
      await page.close();
    }
    // The attempt's own page draws it alone, with its trace id line (none: nothing was traced here).
    const { rows } = await h.pool.query<{ attempt_id: string }>(
      'SELECT attempt_id FROM etl.attempts WHERE job = $1 AND attempt = 2',
      [big],
    );
    const page = await open(`/admin/attempts/${rows[0]!.attempt_id}`, 1400);
    await page.locator('#timeline').scrollIntoViewIfNeeded();
    await page.screenshot({ path: '/tmp/report-etl-timeline-attempt.png', fullPage: true });
    expect(await page.locator('.tl-head').count()).toBe(1);
    expect(await tooltips(page, 'g.tl-page')).toHaveLength(50);
    expect(await page.locator('dd.trace-id').innerText()).toContain('none');
    await page.close();
  },
);
