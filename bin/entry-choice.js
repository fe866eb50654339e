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
 * The compiled entries, preferred first: the bundle of the build (scripts/bundle.js), then tsc's output itself; each
 * with the inputs besides src/ and the tsconfig files it must not be older than. The bundle holds copies of the
 * packages it bundles, so an install that changed node_modules (npm writes node_modules/.package-lock.json then)
 * makes it stale; tsc's output imports them from node_modules, as they are now.
 */
const BUILDS = [
  { file: 'dist/bundle/main.js', inputs: ['node_modules/.package-lock.json'] },
  { file: 'dist/main.js', inputs: [] },
];

/**
 * Which entry bin/report-etl.js runs (issue 14): the compiled build when it is there and not older than the
 * sources, else the TypeScript sources `src/main.ts`. The build is `dist/bundle/main.js` (its modules bundled into a
 * few chunks, which start about 50 ms sooner) or, without a bundle, `dist/main.js` as tsc wrote it.
 *
 * The compiled build saves the type stripper's memory (about 30 MB of RSS) and its start-up time; `npm ci` builds it
 * (package.json `prepare`). "Not older" means: the build's entry was written at or after the newest file under src/
 * and after tsconfig.json and tsconfig.build.json (the build's inputs), as `make` decides. So a stale build never
 * runs: an edit to any source after the last build, or a `git pull` that changed one, makes the bin run the sources
 * until the next `npm run build`, and development with `node bin/report-etl.js` always runs what is in src/. A tree
 * without src/ (a production install of the build alone) runs the build. The bundle is also stale after an install
 * changed node_modules (its copies of the packages would be old): then tsc's output runs. `REPORT_ETL_ENTRY=sources`
 * or `=dist` (the newest build) overrides the choice.
 *
 * @param {string} root the package directory (holding src/ and dist/)
 * @param {string | undefined} override `REPORT_ETL_ENTRY`: 'sources', 'dist', or undefined/'' to decide by time
 * @returns {{ entry: 'dist' | 'sources', file: string, reason: string }} what to run: the kind, its file relative to
 *   `root`, and why in words (for REPORT_ETL_DEBUG_ENTRY)
 */
export function chooseEntry(root, override) {
  const mtime = (path) => {
    try {
      return statSync(join(root, path)).mtimeMs;
    } catch {
      return undefined;
    }
  };
  const builds = BUILDS.flatMap((b) => {
    const built = mtime(b.file);
    return built === undefined ? [] : [{ ...b, built }];
  });
  const newest = builds.reduce((a, b) => (b.built > a.built ? b : a), builds[0]);
  if (override === 'sources') return { entry: 'sources', file: 'src/main.ts', reason: 'REPORT_ETL_ENTRY=sources' };
  if (override === 'dist') return { entry: 'dist', file: newest?.file ?? 'dist/main.js', reason: 'REPORT_ETL_ENTRY=dist' };
  if (newest === undefined) return { entry: 'sources', file: 'src/main.ts', reason: 'no dist/main.js (npm run build makes it)' };
  let sources;
  try {
    sources = newestMtimeMs(join(root, 'src'));
  } catch {
    return { entry: 'dist', file: newest.file, reason: 'no src/ beside dist/' };
  }
  // A tree without the build's config cannot have been built from it: the sources alone decide.
  for (const config of ['tsconfig.json', 'tsconfig.build.json']) sources = Math.max(sources, mtime(config) ?? 0);
  const fresh = builds.find((b) => b.built >= Math.max(sources, ...b.inputs.map((i) => mtime(i) ?? 0)));
  if (fresh) return { entry: 'dist', file: fresh.file, reason: `${fresh.file} is not older than src/${fresh.inputs.length ? ` and ${fresh.inputs.join(', ')}` : ''}` };
  return { entry: 'sources', file: 'src/main.ts', reason: 'src/ changed after the last build (npm run build updates dist/)' };
}
