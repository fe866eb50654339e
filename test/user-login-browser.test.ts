/**
 * The login of a user-dependent service user in a real headless Chromium: admin page ->
 * "Log in" -> the simulator's login form -> /oauth/callback -> the admin page shows the connection logged in.
 * Chromium driven by playwright-core (test/support/browser.ts), as test/admin-browser.test.ts. Screenshots go to
 * /tmp/report-etl-login-*.png.
 */
import { randomBytes } from 'node:crypto';
import type { BrowserContext } from 'playwright-core';
import { launchBrowser, type TestBrowser } from './support/browser.ts';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AdminServer } from '../src/admin/server.ts';
import type { EtlConfig } from '../src/config/schema.ts';
import { makeQueue, type RunQueue } from '../src/queue/queue.ts';
import { SECRET_KEY_ENV } from '../src/secret-box.ts';
import { testPrefix } from './support/env.ts';
import { startHarness, type Harness } from './support/harness.ts';
import { logInInBrowser, adminServerOf } from './support/admin-login.ts';

const token = `tok-${randomBytes(12).toString('hex')}`;
const previousKey = process.env[SECRET_KEY_ENV];

let h: Harness;
let queue: RunQueue;
let server: AdminServer;
let context: BrowserContext | undefined;
let browser: TestBrowser | undefined;
let config: EtlConfig;

beforeAll(async () => {
  process.env[SECRET_KEY_ENV] = randomBytes(32).toString('hex');
  h = await startHarness();
  queue = makeQueue(h.redis, testPrefix('ulbq'));
  server = await adminServerOf(h, queue, { auth: { token }, connections: () => config.connections });
  config = h.config(
    {},
    {
      auth: 'authorization_code',
      clientId: 'demo-user-client',
      clientSecret: undefined,
      scopes: ['svc.pad', 'offline_access'],
      redirectUri: `${server.url}/oauth/callback`,
    },
  );
  browser = await launchBrowser();
  context = browser.context;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await queue?.close();
  await h?.pool.query('DELETE FROM etl.connection_logins WHERE base_url = $1', [h.sim.url]);
  await h?.pool.query('DELETE FROM etl.login_states WHERE base_url = $1', [h.sim.url]);
  await h?.close();
  if (previousKey === undefined) delete process.env[SECRET_KEY_ENV];
  else process.env[SECRET_KEY_ENV] = previousKey;
});

it("logs in from the admin page through the simulator's form and shows the connection logged in", async () => {
  const page = await context!.newPage();
  await logInInBrowser(page, server.url, token);
  await page.goto(`${server.url}/admin/connections`);
  const row = page.locator('tr[data-connection="sim"]');
  expect(await row.locator('.login-state').textContent()).toBe('not logged in');
  await page.screenshot({ path: '/tmp/report-etl-login-before.png', fullPage: true });

  await row.locator('button.login-link').click();
  await page.waitForURL((u) => u.pathname === '/oauth/oauth2/v1/auth');
  expect(await page.locator('h1').textContent()).toBe('Log in');
  await page.locator('#username').fill('anna');
  await page.locator('#password').fill('anna-password');
  await page.screenshot({ path: '/tmp/report-etl-login-form.png', fullPage: true });
  await page.locator('#submit').click();

  await page.waitForURL((u) => u.pathname === '/admin/connections' && u.searchParams.get('loggedIn') === 'sim');
  expect(await page.locator('.notice').textContent()).toBe('Connection sim is logged in.');
  expect(await row.locator('.login-state').textContent()).toBe('logged in');
  expect(await row.locator('td.scopes').textContent()).toBe('svc.pad offline_access');
  expect(await row.textContent()).toMatch(/refresh token 0 min old, expires by \d{4}-\d\d-\d\d/);
  await page.screenshot({ path: '/tmp/report-etl-login-after.png', fullPage: true });
  expect(h.sim.oauthCounters().grants.authorization_code).toBe(1);
}, 60_000);
