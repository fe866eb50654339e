#!/usr/bin/env -S node --max-semi-space-size=1
// Flags: see src/runtime-flags.ts.
// The command line runs the one build: dist/main.js, compiled from src/ by tsc when `npm ci` runs (package.json
// `prepare`) or by `npm run build`. Contributors run the sources with `npm run dev -- <args>`.
// Static imports of plain JavaScript and of built-ins' default exports only, so that this file loads on any Node.js
// and an old one is told what to do (Node.js 20 has no enableCompileCache).
import { existsSync } from 'node:fs';
import nodeModule from 'node:module';
import { fileURLToPath } from 'node:url';
import { nodeVersionProblem } from './node-version.js';

const problem = nodeVersionProblem(process.versions.node);
const entry = new URL('../dist/main.js', import.meta.url);
if (problem !== undefined) {
  process.stderr.write(`report-etl: ${problem}\n`);
  process.exitCode = 2;
} else if (!existsSync(entry)) {
  process.stderr.write(
    'report-etl: the build is missing (dist/main.js): run `npm run build` (`npm ci` also builds it), or run the ' +
      'sources with `npm run dev -- <args>`\n',
  );
  process.exitCode = 2;
} else {
  const flags = await import(new URL('../dist/runtime-flags.js', import.meta.url).href);
  const missing = flags.LONG_RUNNING_COMMANDS.includes(process.argv[2])
    ? flags.LONG_RUNNING_FLAGS.filter((f) => !process.execArgv.includes(f))
    : [];
  // V8 reads these flags only when it starts: the process starts again with them, in its own place (same pid, so
  // signals and supervisors are unaffected). Without execve (Windows, Node.js < 22.15) it runs without them.
  if (missing.length > 0 && typeof process.execve === 'function') {
    const self = fileURLToPath(import.meta.url);
    process.execve(process.execPath, [
      process.execPath,
      ...process.execArgv,
      ...missing,
      self,
      ...process.argv.slice(2),
    ]);
  }
  // V8's code cache on disk (os.tmpdir()/node-compile-cache): a process's modules load in about half the time after
  // the first start. NODE_DISABLE_COMPILE_CACHE=1 turns it off; a cache that cannot be written is skipped.
  nodeModule.enableCompileCache?.();
  await import(entry.href);
}
