/**
 * `report-etl pages --out DIR` into a directory it cannot use (docs/operations.md "Kept pages"): one line saying which
 * and what to do, no stack trace; a directory holding files of the names it would write is refused, nothing written
 * over them.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './support/cli.ts';
import { uniqueName } from './support/env.ts';
import { jobEntry, useHarness } from './support/harness.ts';

const h = useHarness();

/** A run of 3 json pages, kept; gives its attempt id. */
async function keptAttempt(): Promise<string> {
  const config = h.config({
    o: jobEntry(
      { name: 'Sales/Orders', outputType: 'json', paging: 10, parameters: { ROWS: '25' } },
      { table: `${h.schema}.pages_out`, mode: 'replace', archive: { keepDays: 1 } },
    ),
  });
  const r = await h.run(config, 'o', { runKey: uniqueName('o') });
  expect(r.pages).toBe(3);
  return r.attemptId;
}

describe('report-etl pages --out', () => {
  it('a directory it cannot make: one line naming it, exit 2, no stack trace', async () => {
    const attemptId = await keptAttempt();
    const dir = mkdtempSync(join(tmpdir(), 'pages-out-'));
    try {
      const file = join(dir, 'a-file');
      writeFileSync(file, 'not a directory');
      const r = await runCli(['pages', attemptId, '--out', join(file, 'pages')], { env: { LOG_LEVEL: 'warn' } });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`report-etl pages: cannot write to --out ${join(file, 'pages')}`);
      expect(r.stderr).toContain('give a directory you may write to');
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(r.stdout).toBe('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a directory holding a file of a name it would write: refused, nothing written over it', async () => {
    const attemptId = await keptAttempt();
    const dir = mkdtempSync(join(tmpdir(), 'pages-out-'));
    try {
      writeFileSync(join(dir, '2.json'), 'an earlier page 2');
      const r = await runCli(['pages', attemptId, '--out', dir], { env: { LOG_LEVEL: 'warn' } });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`report-etl pages: ${join(dir, '2.json')} exists already`);
      expect(r.stderr).toContain('give --out an empty or new directory');
      expect(readdirSync(dir)).toEqual(['2.json']);
      expect(readFileSync(join(dir, '2.json'), 'utf8')).toBe('an earlier page 2');

      // Files of other names are left as they are, and the pages written beside them.
      rmSync(join(dir, '2.json'));
      writeFileSync(join(dir, 'notes.txt'), 'mine');
      const ok = await runCli(['pages', attemptId, '--out', dir], { env: { LOG_LEVEL: 'warn' } });
      expect(ok.code, ok.stderr).toBe(0);
      expect(readdirSync(dir).sort()).toEqual(['1.json', '2.json', '3.json', 'notes.txt']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
