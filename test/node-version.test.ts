/**
 * The Node.js check of bin/report-etl.js: the check itself, the bin under a Node.js that reports an old version (and
 * one that also has Node.js 20's node:module), the bin still starting on this Node.js, and package.json `engines`
 * saying the same. The bin without a build: test/build.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MIN_NODE_MAJOR, nodeVersionProblem } from '../bin/node-version.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = fileURLToPath(new URL('../bin/report-etl.js', import.meta.url));
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
  engines: { node: string };
};

/** Runs the bin with `node [nodeArgs] <bin> args` on the given Node.js binary. */
function bin(node: string, nodeArgs: string[], args: string[]) {
  return spawnSync(node, [...nodeArgs, BIN, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, LOG_LEVEL: 'warn' },
  });
}

describe('nodeVersionProblem', () => {
  it.each(['22.0.0', '22.18.0', '24.21.0', '30.0.0'])('accepts Node.js %s', (version) => {
    expect(nodeVersionProblem(version)).toBeUndefined();
  });

  it.each(['21.7.3', '20.20.2', '18.19.0'])(
    'refuses Node.js %s in one line that says what is needed and how to get it',
    (version) => {
      expect(nodeVersionProblem(version)).toBe(
        `Node.js >= 22 is needed, this is Node.js ${version}: after \`npm ci\`, use \`npx report-etl ...\` or ` +
          '`npm run report-etl -- ...` (they run the Node.js 24 that `npm ci` installs), or install Node.js 24',
      );
    },
  );

  it('says what package.json engines says', () => {
    expect(pkg.engines.node).toBe(`>=${MIN_NODE_MAJOR}`);
  });
});

describe('bin/report-etl.js', () => {
  it('on a Node.js that reports 21.7.3: one line on stderr, exit 2, no stack', () => {
    // The bin runs unchanged; only the version this Node.js reports is faked, before the bin's first line.
    const fake = "data:text/javascript,Object.defineProperty(process.versions,'node',{value:'21.7.3'})";
    const r = bin(process.execPath, ['--import', fake], ['--version']);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`report-etl: ${nodeVersionProblem('21.7.3')}\n`);
  });

  it('on a Node.js 20 (its version and its node:module): the same line, so the bin imports nothing newer', () => {
    const r = bin(
      process.execPath,
      ['--import', fileURLToPath(new URL('./fixtures/node-20-surface.mjs', import.meta.url))],
      ['--version'],
    );
    expect(r.stderr).toBe(`report-etl: ${nodeVersionProblem('20.20.2')}\n`);
    expect(r.status).toBe(2);
  });

  it('still starts on this Node.js, from the build', () => {
    const r = bin(process.execPath, [], ['--version']);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe(pkg.version);
    expect(r.status).toBe(0);
  });
});
