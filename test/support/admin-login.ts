/**
 * The admin server as the tests start it, and logging in to it as its users do: the login form's POST of the token
 * (never a token in a URL), over plain HTTP for a session cookie, or by filling in the form in Chromium.
 */
import type { Page } from 'playwright-core';
import { startAdminServer, type AdminServer, type AdminServerOptions } from '../../src/admin/server.ts';
import { silentLogger } from '../../src/logger.ts';
import type { RunQueue } from '../../src/queue/queue.ts';
import type { Harness } from './harness.ts';

/**
 * Starts the admin server (docs/operations.md "Admin access") on the harness's pool and Redis and `queue`, with a
 * silent logger, on a free loopback port; `options` adds to or overrides these (auth, config, keyPrefix, ...). The
 * caller closes it.
 */
export function adminServerOf(
  h: Pick<Harness, 'pool' | 'redis'>,
  queue: RunQueue,
  options: Partial<AdminServerOptions> = {},
): Promise<AdminServer> {
  return startAdminServer({ pool: h.pool, redis: h.redis, queue, logger: silentLogger, port: 0, ...options });
}

/**
 * POSTs `token` as the login form does.
 * @returns the answer, not followed (303 with the session cookie, or 401 with the form and why)
 */
export function postLogin(url: string, token: string): Promise<Response> {
  return fetch(`${url}/admin/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: url },
    body: new URLSearchParams({ token }).toString(),
    redirect: 'manual',
  });
}

/**
 * The session cookie (`name=value`) of a login with `token`.
 * @throws when the login is refused
 */
export async function adminSessionCookie(url: string, token: string): Promise<string> {
  const res = await postLogin(url, token);
  const cookie = res.headers.get('set-cookie');
  if (res.status !== 303 || !cookie) throw new Error(`login answered ${res.status}: ${await res.text()}`);
  return cookie.split(';')[0]!;
}

/** Opens the login form in `page`, types `token` and submits it; resolves on the page it lands on. */
export async function logInInBrowser(page: Page, url: string, token: string): Promise<void> {
  await page.goto(`${url}/admin/login`);
  await page.locator('#token').fill(token);
  await Promise.all([page.waitForURL((u) => u.pathname !== '/admin/login'), page.locator('#login button').click()]);
}
