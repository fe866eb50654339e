/**
 * Which entry bin/report-etl.js runs (issue 14): the compiled build while it is not older than the sources, else the
 * sources, so that `npx report-etl` gets the build's memory and start-up and a stale build never runs.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { chooseEntry } from '../bin/entry-choice.js';

const BIN = fileURLToPath(new URL('../bin/report-etl.js', import.meta.url));
let root = '';

/** A package tree with the given files, each written with its mtime in seconds since the epoch. */
function tree(files: Record<string, number>): string {
  root = mkdtempSync(join(tmpdir(), 'report-etl-entry-'));
  for (const [path, secs] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), '');
    utimesSync(join(root, path), secs, secs);
  }
  return root;
}

afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true });
  root = '';
});

describe('chooseEntry', () => {
  it('runs dist/ when it was built at or after the newest source and the build configs', () => {
    const dir = tree({ 'src/main.ts': 100, 'src/cli/run.ts': 200, 'tsconfig.json': 50, 'tsconfig.build.json': 50, 'dist/main.js': 200 });
    expect(chooseEntry(dir, undefined)).toEqual({ entry: 'dist', reason: 'dist/main.js is not older than src/' });
  });

  it('runs the sources when any file under src/, however deep, changed after the build', () => {
    const dir = tree({ 'src/main.ts': 100, 'src/pages/deep/decoder.ts': 301, 'tsconfig.json': 50, 'dist/main.js': 300 });
    expect(chooseEntry(dir, undefined).entry).toBe('sources');
  });

  it('runs the sources when a build config changed after the build', () => {
    const dir = tree({ 'src/main.ts': 100, 'tsconfig.build.json': 400, 'dist/main.js': 300 });
    expect(chooseEntry(dir, undefined).entry).toBe('sources');
  });

  it('runs the sources without a build, and the build without sources', () => {
    expect(chooseEntry(tree({ 'src/main.ts': 100 }), undefined)).toEqual({ entry: 'sources', reason: 'no dist/main.js (npm run build makes it)' });
    rmSync(root, { recursive: true, force: true });
    expect(chooseEntry(tree({ 'dist/main.js': 100 }), undefined).entry).toBe('dist');
  });

  it('REPORT_ETL_ENTRY overrides the times', () => {
    const dir = tree({ 'src/main.ts': 500, 'dist/main.js': 100 });
    expect(chooseEntry(dir, 'dist').entry).toBe('dist');
    expect(chooseEntry(dir, 'sources').entry).toBe('sources');
    expect(chooseEntry(dir, '').entry).toBe('sources');
  });
});

describe('bin/report-etl.js', () => {
  it('runs the entry it chose, and says which with REPORT_ETL_DEBUG_ENTRY=1', () => {
    const r = spawnSync(process.execPath, [BIN, '--version'], { encoding: 'utf8', env: { ...process.env, REPORT_ETL_ENTRY: 'sources', REPORT_ETL_DEBUG_ENTRY: '1' } });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toBe('report-etl: running src/main.ts: REPORT_ETL_ENTRY=sources\n');
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
