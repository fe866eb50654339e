#!/usr/bin/env -S node --max-semi-space-size=1
// Flags: see src/runtime-flags.ts.
// Node >= 22.18 runs the TypeScript sources directly (type stripping): no build step for development and npx.
// The Docker image runs the compiled dist/main.js instead (npm run build).
import '../src/main.ts';
