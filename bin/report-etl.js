#!/usr/bin/env -S node --max-semi-space-size=1
// Flags: see src/runtime-flags.ts.
// Node >= 22.18 runs the TypeScript sources directly (type stripping): no build step for development and npx.
// The Docker image runs the compiled dist/main.js instead (npm run build).
import { nodeVersionProblem } from './node-version.js';

const problem = nodeVersionProblem(process.versions.node, process.features.typescript);
if (problem === undefined) {
  // Imported only after the check: a static import of a .ts file would fail before any line here runs.
  await import('../src/main.ts');
} else {
  process.stderr.write(`report-etl: ${problem}\n`);
  process.exitCode = 2;
}
