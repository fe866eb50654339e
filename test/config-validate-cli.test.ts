import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');

/** Runs `npx report-etl ...` in the repository root; npm's own warnings are dropped from stderr. */
function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const base = { ...process.env };
  for (const k of Object.keys(base)) if (/^REPORT_/.test(k)) delete base[k];
  return new Promise((resolve) => {
    execFile('npx', ['report-etl', ...args], { cwd: ROOT, env: { ...base, ...env } }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({
        code,
        stdout,
        stderr: stderr
          .split('\n')
          .filter((l) => !l.startsWith('npm warn'))
          .join('\n'),
      });
    });
  });
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'report-etl-validate-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('report-etl validate', () => {
  it('accepts the sample jobs.yaml: exit 0 and a summary', async () => {
    const r = await cli(['validate', '--config', 'jobs.yaml']);
    expect(r.stderr.trim()).toBe('');
    const out = r.stdout.split('\n');
    expect(out[0]).toBe(
      'jobs.yaml: ok, 5 jobs (sales_orders, stock_levels, ledger, orders_compact, broken_report) on 1 connection',
    );
    // Each job's next tick, in its zone with its offset.
    expect(out[1]).toMatch(
      /^ {2}sales_orders: "\* \* \* \* \*" in Europe\/Zurich, next tick \d{4}-\d\d-\d\d \d\d:\d\d:00\+0[12]:00$/,
    );
    expect(out).toContain('  orders_compact: no schedule (runs by hand or enqueue only)');
    expect(r.code).toBe(0);
  });

  it('checks the settings of the environment: REPORT_ETL_TIME_ZONE and REPORT_ETL_TRACE_URL (exit 2)', async () => {
    const r = await cli(['validate', '--config', 'jobs.yaml', '--no-database'], {
      REPORT_ETL_TIME_ZONE: 'Mars/Olympus',
      REPORT_ETL_TRACE_URL: 'ftp://tempo.example/trace/{traceId}',
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'error: environment: REPORT_ETL_TIME_ZONE=Mars/Olympus: unknown time zone (write job, UTC or an IANA zone ' +
        'such as Europe/Berlin)',
    );
    expect(r.stderr).toContain(
      'error: environment: REPORT_ETL_TRACE_URL=ftp://tempo.example/trace/{traceId}: ' +
        'only http and https links are made',
    );
    expect(r.stderr).toContain('environment: 2 errors');
    const ok = await cli(['validate', '--config', 'jobs.yaml', '--no-database'], {
      REPORT_ETL_TIME_ZONE: 'Europe/Berlin',
      REPORT_ETL_TRACE_URL: 'https://tempo.example/trace/{traceId}',
    });
    expect(ok.stderr.trim()).toBe('');
    expect(ok.code).toBe(0);
  });

  it('uses $REPORT_ETL_CONFIG as the default path, and lists every problem with exit 2', async () => {
    const path = join(dir, 'bad.yaml');
    await writeFile(
      path,
      [
        'connections:',
        '  erp:',
        '    baseUrl: https://erp.example.com',
        '    clientId: ${CLI_TEST_ID}',
        '    clientSecret: plain-Secret-4711',
        'jobs:',
        '  a:',
        '    connection: erp',
        '    schedule: "every day"',
        '    report: { mandant: 1, name: x, paging: 1 }',
        '    target: { table: erp.a }',
      ].join('\n'),
    );
    const r = await cli(['validate'], { REPORT_ETL_CONFIG: path });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trim().split('\n');
    expect(lines).toEqual([
      `${path}:4:15: error: connections.erp.clientId: environment variable CLI_TEST_ID is not set: ` +
        `export CLI_TEST_ID, or write \${CLI_TEST_ID:-default} in the file`,
      `${path}:5:19: error: connections.erp.clientSecret: clientSecret must come from the environment: ` +
        `write \${REPORT_CLIENT_SECRET} (any variable name) instead of the secret itself`,
      expect.stringMatching(
        new RegExp(
          `^${path.replaceAll('.', '\\.')}:9:15: error: jobs\\.a\\.schedule: invalid cron expression "every day": ` +
            `expected 5 or 6 fields but got 2`,
        ),
      ),
      `${path}:10:44: error: jobs.a.report.paging: paging must be at least 10: ` +
        `below 10 the server silently uses 10000 rows per page`,
      `${path}: 4 errors`,
    ]);
    expect(r.stderr).not.toContain('plain-Secret-4711');
  });

  it('calls a problem of one job an error, not a warning as run of another job does (exit 2)', async () => {
    const path = join(dir, 'unknown-key.yaml');
    const sample = await readFile(join(ROOT, 'jobs.yaml'), 'utf8');
    const lines = sample.split('\n');
    const at = lines.indexOf('      paging: 1000');
    expect(at).toBeGreaterThan(0);
    lines.splice(at + 1, 0, '      pageSize: 5000');
    await writeFile(path, lines.join('\n'));
    const r = await cli(['validate', '--config', path, '--no-database']);
    expect(r.code).toBe(2);
    const err = r.stderr.trim().split('\n');
    expect(err).toHaveLength(2);
    expect(err[0]).toMatch(
      new RegExp(
        `^${path.replaceAll('.', '\\.')}:${at + 2}:7: error: jobs\\.\\w+\\.report\\.pageSize: unknown key "pageSize"`,
      ),
    );
    expect(err[1]).toBe(`${path}: 1 error`);
    expect(r.stderr).not.toContain('warning');
    expect(r.stderr).not.toContain('is skipped');
  });

  it('exits 2 when the file is missing', async () => {
    const r = await cli(['validate', '--config', join(dir, 'missing.yaml')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `${join(dir, 'missing.yaml')}: file not found: pass --config PATH or set REPORT_ETL_CONFIG`,
    );
  });
});
