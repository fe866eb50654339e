/**
 * The browser of the admin pages' tests: Chromium driven by playwright-core. A system Chromium when there is one
 * (CHROMIUM_PATH, else /usr/bin/chromium, /usr/bin/chromium-browser, /usr/bin/google-chrome), else the one inside the
 * devDependency @sparticuz/chromium (a Chromium binary shipped in the npm package, unpacked into the temp folder on
 * first use), so that `npm ci && npm test` needs nothing from the system's package manager.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

const SYSTEM_CHROMIUMS = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

/**
 * Flags of a headless Chromium on a machine with a closed network: no sandbox (tests run as root), no GPU, and none
 * of the background connections (component updates, sync, QUIC) that a closed network refuses many times a start.
 */
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--no-zygote',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Where the Chromium comes from, and its path. */
export interface ChromiumBinary {
  source: 'CHROMIUM_PATH' | 'system' | '@sparticuz/chromium';
  path: string;
}

/**
 * The Chromium to drive: CHROMIUM_PATH, a system one, else @sparticuz/chromium's.
 * @throws when CHROMIUM_PATH names a file that does not exist
 */
export async function chromiumBinary(): Promise<ChromiumBinary> {
  const configured = process.env.CHROMIUM_PATH;
  if (configured) {
    if (!existsSync(configured))
      throw new Error(
        `CHROMIUM_PATH is ${configured}, which does not exist: unset it to use the system's ` +
          `or the npm package's Chromium`,
      );
    return { source: 'CHROMIUM_PATH', path: configured };
  }
  const system = SYSTEM_CHROMIUMS.find((p) => existsSync(p));
  if (system) return { source: 'system', path: system };
  const { default: packaged } = await import('@sparticuz/chromium');
  return { source: '@sparticuz/chromium', path: await packaged.executablePath() };
}

/** A browser context with a fresh profile; `close()` ends the browser and removes the profile. */
export interface TestBrowser {
  context: BrowserContext;
  binary: ChromiumBinary;
  close(): Promise<void>;
}

/** Launches headless Chromium with a fresh profile (a persistent context, as a user's browser keeps its cookies). */
export async function launchBrowser(): Promise<TestBrowser> {
  const binary = await chromiumBinary();
  const userDataDir = await mkdtemp(join(tmpdir(), 'report-etl-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: binary.path,
      headless: true,
      args: ARGS,
    });
    return {
      context,
      binary,
      async close() {
        await context.close().catch(() => undefined);
        await rm(userDataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(userDataDir, { recursive: true, force: true });
    throw new Error(`Chromium (${binary.source}: ${binary.path}) did not start: ${(err as Error).message}`, {
      cause: err,
    });
  }
}
