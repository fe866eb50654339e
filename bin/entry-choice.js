// Plain JavaScript on purpose, like node-version.js: it runs before any TypeScript is loaded.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The newest modification time of any file under `dir` (recursively), in ms since the epoch; 0 when there is none.
 * @param {string} dir
 * @returns {number}
 */
export function newestMtimeMs(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const t = entry.isDirectory() ? newestMtimeMs(path) : statSync(path).mtimeMs;
    if (t > newest) newest = t;
  }
  return newest;
}

/**
 * Which entry bin/report-etl.js runs (issue 14): the compiled build `dist/main.js` when it is there and not older
 * than the sources, else the TypeScript sources `src/main.ts`.
 *
 * The compiled build saves the type stripper's memory (about 30 MB of RSS) and its start-up time; `npm ci` builds it
 * (package.json `prepare`). "Not older" means: dist/main.js was written at or after the newest file under src/ and
 * after tsconfig.json and tsconfig.build.json (the build's inputs), as `make` decides. So a stale build never runs: an edit
 * to any source after the last build, or a `git pull` that changed one, makes the bin run the sources until the next
 * `npm run build`, and development with `node bin/report-etl.js` always runs what is in src/. A tree without src/
 * (a production install of the build alone) runs dist/. `REPORT_ETL_ENTRY=sources` or `=dist` overrides the choice.
 *
 * @param {string} root the package directory (holding src/ and dist/)
 * @param {string | undefined} override `REPORT_ETL_ENTRY`: 'sources', 'dist', or undefined/'' to decide by time
 * @returns {{ entry: 'dist' | 'sources', reason: string }} what to run, and why in words (for REPORT_ETL_DEBUG_ENTRY)
 */
export function chooseEntry(root, override) {
  if (override === 'sources' || override === 'dist') return { entry: override, reason: `REPORT_ETL_ENTRY=${override}` };
  let built;
  try {
    built = statSync(join(root, 'dist', 'main.js')).mtimeMs;
  } catch {
    return { entry: 'sources', reason: 'no dist/main.js (npm run build makes it)' };
  }
  let sources;
  try {
    sources = newestMtimeMs(join(root, 'src'));
  } catch {
    return { entry: 'dist', reason: 'no src/ beside dist/' };
  }
  for (const config of ['tsconfig.json', 'tsconfig.build.json']) {
    try {
      sources = Math.max(sources, statSync(join(root, config)).mtimeMs);
    } catch {
      // a tree without the build's config cannot have been built from it: the sources alone decide
    }
  }
  return built >= sources
    ? { entry: 'dist', reason: 'dist/main.js is not older than src/' }
    : { entry: 'sources', reason: 'src/ changed after the last build (npm run build updates dist/)' };
}
