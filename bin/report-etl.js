#!/usr/bin/env -S node --max-semi-space-size=1
// Flags: see src/runtime-flags.ts.
// The command line runs the one build: dist/main.js, compiled from src/ by tsc when `npm ci` runs (package.json
// `prepare`) or by `npm run build`. Contributors run the sources with `npm run dev -- <args>`.
// Static imports of plain JavaScript and of built-ins' default exports only, so that this file loads on any Node.js
// and an old one is told what to do (Node.js 20 has no enableCompileCache).
import { existsSync } from 'node:fs';
import nodeModule from 'node:module';
import { nodeVersionProblem } from './node-version.js';

const problem = nodeVersionProblem(process.versions.node);
const entry = new URL('../dist/main.js', import.meta.url);
if (problem !== undefined) {
  process.stderr.write(`report-etl: ${problem}\n`);
  process.exitCode = 2;
} else if (!existsSync(entry)) {
  process.stderr.write(
    'report-etl: the build is missing (dist/main.js): run `npm run build` (`npm ci` also builds it), or run the sources with `npm run dev -- <args>`\n',
  );
  process.exitCode = 2;
} else {
  // V8's code cache on disk (os.tmpdir()/node-compile-cache): a process's modules load in about half the time after
  // the first start. NODE_DISABLE_COMPILE_CACHE=1 turns it off; a cache that cannot be written is skipped.
  nodeModule.enableCompileCache?.();
  await import(entry.href);
}
