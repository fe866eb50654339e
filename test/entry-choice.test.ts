/**
 * Which entry bin/report-etl.js runs (issue 14): the compiled build (its bundle when there) while it is not older
 * than the sources, else the sources, so that `npx report-etl` gets the build's memory and start-up and a stale
 * build never runs.
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
    expect(chooseEntry(dir, undefined)).toEqual({ entry: 'dist', file: 'dist/main.js', reason: 'dist/main.js is not older than src/' });
  });

  it('prefers the bundle of the build, and skips a bundle older than the sources for a fresh dist/main.js', () => {
    const bundled = tree({ 'src/main.ts': 100, 'tsconfig.json': 50, 'dist/main.js': 200, 'dist/bundle/main.js': 201 });
    expect(chooseEntry(bundled, undefined)).toEqual({ entry: 'dist', file: 'dist/bundle/main.js', reason: 'dist/bundle/main.js is not older than src/ and node_modules/.package-lock.json' });
    rmSync(root, { recursive: true, force: true });
    // tsc alone rebuilt dist/ after an edit: the earlier bundle is stale, tsc's output is not.
    const rebuilt = tree({ 'src/main.ts': 300, 'tsconfig.json': 50, 'dist/main.js': 300, 'dist/bundle/main.js': 200 });
    expect(chooseEntry(rebuilt, undefined).file).toBe('dist/main.js');
    rmSync(root, { recursive: true, force: true });
    const stale = tree({ 'src/main.ts': 400, 'dist/main.js': 300, 'dist/bundle/main.js': 300 });
    expect(chooseEntry(stale, undefined)).toEqual({ entry: 'sources', file: 'src/main.ts', reason: 'src/ changed after the last build (npm run build updates dist/)' });
  });

  it('skips a bundle older than the last install (its copies of the packages are old) for tsc\'s output', () => {
    const dir = tree({ 'src/main.ts': 100, 'dist/main.js': 200, 'dist/bundle/main.js': 200, 'node_modules/.package-lock.json': 300 });
    expect(chooseEntry(dir, undefined)).toEqual({ entry: 'dist', file: 'dist/main.js', reason: 'dist/main.js is not older than src/' });
  });

  it('REPORT_ETL_ENTRY=dist runs the newest build', () => {
    const dir = tree({ 'src/main.ts': 500, 'dist/main.js': 300, 'dist/bundle/main.js': 200 });
    expect(chooseEntry(dir, 'dist')).toMatchObject({ entry: 'dist', file: 'dist/main.js' });
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
    expect(chooseEntry(tree({ 'src/main.ts': 100 }), undefined)).toEqual({ entry: 'sources', file: 'src/main.ts', reason: 'no dist/main.js (npm run build makes it)' });
    rmSync(root, { recursive: true, force: true });
    expect(chooseEntry(tree({ 'dist/main.js': 100, 'dist/bundle/main.js': 100 }), undefined)).toEqual({ entry: 'dist', file: 'dist/bundle/main.js', reason: 'no src/ beside dist/' });
  });

  it('REPORT_ETL_ENTRY overrides the times', () => {
    const dir = tree({ 'src/main.ts': 500, 'dist/main.js': 100 });
    expect(chooseEntry(dir, 'dist')).toMatchObject({ entry: 'dist', file: 'dist/main.js' });
    expect(chooseEntry(dir, 'sources')).toMatchObject({ entry: 'sources', file: 'src/main.ts' });
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
