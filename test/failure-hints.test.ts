/**
 * The failure hints the admin pages show are docs/troubleshooting.md's own words: each code's hint is the row of the
 * troubleshooting table that names the code, and every code has one.
 */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { FAILURE_HINTS, failureHint } from '../src/failure-hints.ts';

const table = readFileSync(new URL('../docs/troubleshooting.md', import.meta.url), 'utf8')
  .split('\n')
  .filter((l) => l.startsWith('| `'))
  .map((l) => l.slice(2, -2).split(' | '));
const plain = (md: string) => md.replace(/\[([^\]]+)\]\([^)]+\)/g, '$1').replaceAll('**', '');

it("gives each error code the troubleshooting table's row that names it", () => {
  for (const [code, hint] of Object.entries(FAILURE_HINTS)) {
    const rows = table.filter((r) => r[0]!.includes(`\`${code}\``));
    expect(rows.length, `docs/troubleshooting.md has no row for ${code}`).toBeGreaterThan(0);
    expect(
      rows.map((r) => ({ means: plain(r[1]!), todo: plain(r[2]!) })),
      code,
    ).toContainEqual(hint);
  }
});

it('answers a PostgreSQL SQLSTATE with the INTERNAL row, and nothing for an unknown kind', () => {
  expect(failureHint('PG_42701')).toBe(FAILURE_HINTS.INTERNAL);
  expect(failureHint('REPORT_FAILED')?.todo).toContain('`.avx`');
  expect(failureHint('NO_SUCH_CODE')).toBeUndefined();
  expect(failureHint('toString')).toBeUndefined();
  expect(failureHint(null)).toBeUndefined();
});
