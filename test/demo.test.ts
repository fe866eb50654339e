/**
 * `npm run demo` as a newcomer runs it (not interactive, so it exits after the first round): simulator, scheduler,
 * worker and admin server come up, every sample job ends as expected within the round, and it says where to look.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { DATABASE_URL, REDIS_URL, uniqueName } from './support/env.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

it('loads every sample report, shows the failing one, prints where to look, and exits 0', async () => {
  const [simPort, adminPort] = [await freePort(), await freePort()];
  const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ['scripts/demo.ts', '--once'], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL,
        REDIS_URL,
        REPORT_BASE_URL: `http://127.0.0.1:${simPort}`,
        ADMIN_PORT: String(adminPort),
        REPORT_ETL_QUEUE_PREFIX: uniqueName('demo'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  expect(result.stderr).not.toContain('demo-secret');
  expect(result.code, result.stdout + result.stderr).toBe(0);
  for (const job of ['sales_orders', 'stock_levels', 'ledger', 'orders_compact']) {
    expect(result.stdout).toMatch(new RegExp(`^${job} +succeeded +[1-9]\\d*`, 'm'));
  }
  expect(result.stdout).toMatch(/^broken_report +failed .*Report execution failed/m);
  expect(result.stdout).toContain(`http://127.0.0.1:${adminPort}/admin/runs`);
  expect(result.stdout).toContain('psql ');
  expect(result.stdout).toContain('report-etl runs');
}, 120_000);
