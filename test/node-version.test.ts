/**
 * The Node.js check of bin/report-etl.js (issue 13 "Node < 22.18 fails with ERR_UNKNOWN_FILE_EXTENSION"): the
 * check itself, the bin under a Node.js that reports an old version (and one that also has Node.js 20's
 * node:module), the bin still starting on this Node.js, and package.json `engines` and the README saying the same.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MIN_NODE, nodeVersionProblem } from '../bin/node-version.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = fileURLToPath(new URL('../bin/report-etl.js', import.meta.url));
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string; engines: { node: string } };

/** Runs the bin with `node [nodeArgs] bin/report-etl.js args` on the given Node.js binary. */
function bin(node: string, nodeArgs: string[], args: string[]) {
  return spawnSync(node, [...nodeArgs, BIN, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 30_000, env: { ...process.env, LOG_LEVEL: 'warn' } });
}

describe('nodeVersionProblem', () => {
  it.each([
    ['22.18.0', 'strip'],
    ['22.20.1', 'strip'],
    ['23.6.0', 'strip'],
    ['24.21.0', 'strip'],
    ['30.0.0', 'transform'],
  ])('accepts Node.js %s (type stripping %s)', (version, typescript) => {
    expect(nodeVersionProblem(version, typescript)).toBeUndefined();
  });

  it.each([
    ['22.17.1', undefined],
    ['22.9.0', undefined],
    ['20.20.2', undefined],
    ['18.19.0', undefined],
  ])('refuses Node.js %s in one line that says what is needed and how to get it', (version, typescript) => {
    const problem = nodeVersionProblem(version, typescript);
    expect(problem).toBe(
      `Node.js >= 22.18 is needed to run the TypeScript sources, this is Node.js ${version}: after \`npm ci\`, use \`npx report-etl ...\` or ` +
        '`npm run report-etl -- ...` (they run the Node.js 24 that `npm ci` installs), or install Node.js >= 22.18',
    );
  });

  it('refuses a new enough Node.js whose type stripping is off (23.0 to 23.5, or --no-experimental-strip-types)', () => {
    expect(nodeVersionProblem('23.5.0', false)).toMatch(/^Node\.js >= 22\.18 is needed .*Node\.js 23\.5\.0 does not strip types here/);
    expect(nodeVersionProblem('24.21.0', false)).toContain('--no-experimental-strip-types');
  });
});

describe('bin/report-etl.js', () => {
  it('on a Node.js that reports 22.17.1: one line on stderr, exit 2, no stack and no ERR_UNKNOWN_FILE_EXTENSION', () => {
    // The bin runs unchanged; only the version this Node.js reports is faked, before the bin's first line.
    const fake = "data:text/javascript,Object.defineProperty(process.versions,'node',{value:'22.17.1'})";
    const r = bin(process.execPath, ['--import', fake], ['--version']);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`report-etl: ${nodeVersionProblem('22.17.1', undefined)}\n`);
  });

  it('on a Node.js 20 (its version and its node:module): the same line, so the bin imports nothing newer', () => {
    const r = bin(process.execPath, ['--import', fileURLToPath(new URL('./fixtures/node-20-surface.mjs', import.meta.url))], ['--version']);
    expect(r.stderr).toBe(`report-etl: ${nodeVersionProblem('20.20.2', undefined)}\n`);
    expect(r.status).toBe(2);
  });

  it('with type stripping turned off: the same kind of line and exit 2', () => {
    const r = bin(process.execPath, ['--no-experimental-strip-types'], ['--version']);
    expect(r.status).toBe(2);
    expect(r.stderr.split('\n')).toEqual([expect.stringMatching(/^report-etl: Node\.js >= 22\.18 is needed .*--no-experimental-strip-types/), '']);
  });

  it('still starts on this Node.js', () => {
    expect(nodeVersionProblem(process.versions.node, process.features.typescript)).toBeUndefined();
    const r = bin(process.execPath, [], ['--version']);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe(pkg.version);
    expect(r.status).toBe(0);
  });
});

it('package.json engines and the README name the same minimum as the check', () => {
  expect(pkg.engines.node).toBe(`>=${MIN_NODE.join('.')}`);
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  expect(readme).toContain(`Node.js ≥ ${MIN_NODE.join('.')}`);
  expect(readme).not.toMatch(/Node(\.js)? ?(≥|>=) ?22(?!\.18)/);
});
