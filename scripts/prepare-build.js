// `npm ci` / `npm install` run this (package.json `prepare`): it compiles src/ to dist/ and bundles that into
// dist/bundle/ (what `npm run build` does; scripts/bundle.js), so that the README's `npx report-etl …` runs the
// compiled build from the first command on (bin/entry-choice.js; issue 14: a third less memory, a quicker start).
// Plain JavaScript, so that it runs on whatever Node.js npm has.
//
// Skipped, with one line saying so, where there is nothing to build from: no src/ (the Docker image's dependency
// stages copy package.json alone) or no TypeScript (`npm ci --omit=dev`). A failed build removes dist/main.js, so that
// the bin runs the sources rather than a partial build, and fails the install with the compiler's messages.
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = `${root}node_modules/typescript/bin/tsc`;
if (!existsSync(`${root}src`) || !existsSync(tsc)) {
  process.stdout.write(`report-etl prepare: not building dist/ (${existsSync(`${root}src`) ? 'no TypeScript installed' : 'no src/'}); the bin runs the sources\n`);
} else {
  const r = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    rmSync(`${root}dist/main.js`, { force: true });
    rmSync(`${root}dist/bundle`, { recursive: true, force: true });
    process.stderr.write('report-etl prepare: `tsc -p tsconfig.build.json` failed (above); dist/main.js removed, so the bin runs the sources\n');
    process.exitCode = 1;
  } else {
    try {
      // Imported here: the Docker image's dependency stages copy this file alone, and build nothing.
      const { bundle } = await import('./bundle.js');
      await bundle(root);
      process.stdout.write('report-etl prepare: built dist/ and dist/bundle/ (npx report-etl runs the bundle while it is not older than src/)\n');
    } catch (err) {
      // The bundle only starts quicker: without it the bin runs dist/main.js, and the install goes on.
      process.stderr.write(`report-etl prepare: built dist/, but bundling it failed (${err instanceof Error ? err.message : String(err)}); the bin runs dist/main.js\n`);
    }
  }
}
