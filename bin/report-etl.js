#!/usr/bin/env -S node --max-semi-space-size=1
// Flags: see src/runtime-flags.ts.
// Runs the compiled build (dist/bundle/main.js, else dist/main.js; made by `npm ci` through package.json `prepare`, or
// by `npm run build`) when it is not older than the sources, else the TypeScript sources directly (Node >= 22.18
// strips the types): see bin/entry-choice.js. The Docker image runs dist/bundle/main.js itself.
// Static imports of plain JavaScript and of built-ins' default exports only: they load on any Node.js (Node.js 20 has
// no enableCompileCache), and sooner than import() calls.
import nodeModule from 'node:module';
import { fileURLToPath } from 'node:url';
import { chooseEntry } from './entry-choice.js';
import { nodeVersionProblem } from './node-version.js';

const problem = nodeVersionProblem(process.versions.node, process.features.typescript);
if (problem === undefined) {
  // V8's code cache on disk (os.tmpdir()/node-compile-cache): a run's modules load in about half the time after the
  // first start (issue 14). NODE_DISABLE_COMPILE_CACHE=1 turns it off; a cache that cannot be written is skipped.
  nodeModule.enableCompileCache?.();
  const { file, reason } = chooseEntry(fileURLToPath(new URL('..', import.meta.url)), process.env.REPORT_ETL_ENTRY);
  if (process.env.REPORT_ETL_DEBUG_ENTRY === '1') process.stderr.write(`report-etl: running ${file}: ${reason}\n`);
  // Imported only after the check: a static import of a .ts file would fail before any line here runs.
  await import(`../${file}`);
} else {
  process.stderr.write(`report-etl: ${problem}\n`);
  process.exitCode = 2;
}
