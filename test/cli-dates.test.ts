/**
 * The dates of the command line (`--since`, `--from`/`--to`, `--logical-time`): an impossible one is a usage error
 * naming what is wrong, never a date rolled over into another month or year (src/config/time-template.ts
 * parseZonedDate, docs/operations.md "Times").
 */
import { expect, it } from 'vitest';
import { runCli } from './support/cli.ts';

it('runs --since refuses February 30 and a bare number, and takes a time as runs prints it', async () => {
  const feb30 = await runCli(['runs', '--since', '2026-02-30']);
  expect(feb30.code).toBe(2);
  expect(feb30.stderr).toContain(`argument '2026-02-30' is invalid. not a date: "2026-02-30": 2026-02 has no day 30`);
  const number = await runCli(['runs', '--since', '1']);
  expect(number.code).toBe(2);
  expect(number.stderr).toContain('write a window such as 2d or 12h, or a date such as 2026-01-31');
  const printed = await runCli(['runs', '--since', '2099-01-01 00:00:00+01:00']);
  expect(printed.stderr).not.toContain('invalid');
  expect(printed.code).toBe(0);
});

it('backfill, enqueue and run refuse month 13 before anything is queued or run', async () => {
  // The sample jobs.yaml at the repository root; every command stops at the date, before Redis or the server.
  for (const args of [
    ['backfill', 'ledger', '--from', '2026-13-01', '--to', '2027-01-02'],
    ['enqueue', 'orders_compact', '--logical-time', '2026-13-01'],
    ['run', 'orders_compact', '--logical-time', '2026-13-01'],
    ['preview', 'orders_compact', '--logical-time', '2026-11-26T24:00'],
  ]) {
    const r = await runCli(args, { env: { REPORT_ETL_CONFIG: 'jobs.yaml' } });
    expect(r.code, args.join(' ')).toBe(2);
    expect(r.stderr, args.join(' ')).toMatch(/report-etl: config error: not a date: "2026-1[13]-(01|26T24:00)": /);
    expect(r.stdout, args.join(' ')).not.toContain('queued');
  }
});
