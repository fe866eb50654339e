#!/usr/bin/env -S node --max-semi-space-size=1
// Flags: see src/runtime-flags.ts.
// Node >= 22.18 runs the TypeScript sources directly (type stripping): no build step.
import { main } from '../src/cli.ts';

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`report-etl: ${err?.stack ?? err}\n`);
    process.exitCode = 2;
  },
);
