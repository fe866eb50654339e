/**
 * `report-etl simulate --help` lists the simulator's reports and the parameters it reads, so that a newcomer can
 * write a job for one of them from the help alone (README "Commands": simulate).
 */
import { expect, it } from 'vitest';
import { runCli } from './support/cli.ts';
import { CATALOGUE } from '../src/simulator/catalogue.ts';

it('lists every report as jobs.yaml names it, with its rows and what it is, and the parameters', async () => {
  const help = await runCli(['simulate', '--help']);
  expect(help.code).toBe(0);
  const text = help.stdout.replace(/\s+/g, ' ');
  expect(text).toContain('Reports (report.name in jobs.yaml; ".avw" is appended');
  for (const report of CATALOGUE) {
    const name = report.path.replace(/\.avw$/, '');
    expect(text, name).toContain(` ${name} (`);
    expect(text, name).toContain(report.description.replace(/\s+/g, ' '));
  }
  expect(text).toContain('Sales/Orders (2,500 rows)');
  expect(text).toContain('Finance/Bookings (rows by FROM/TO and mandant)');
  expect(text).toContain('Report parameters it reads: ROWS (the row count, 0 to 50,000,000), FROM and TO');
  expect(text).toContain('SIM_FAIL_MANDANT (a mandant, or several comma-separated');
  // Lines a terminal of 100 columns shows whole.
  for (const line of help.stdout.split('\n')) expect(line.length, line).toBeLessThanOrEqual(100);
});
