// `npm ci` / `npm install` run this (package.json `prepare`): it compiles src/ to dist/ with tsc (what `npm run build`
// does), so that `npx report-etl …` runs the build from the first command on. Plain JavaScript, so that it runs on
// whatever Node.js npm has.
//
// Skipped, with one line saying so, where there is nothing to build from: no src/ (the Docker image's dependency
// stages copy package.json alone) or no TypeScript (`npm ci --omit=dev`). A failed build removes dist/main.js, so that
// the bin says the build is missing rather than running a partial one, and fails the install with tsc's messages.
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = `${root}node_modules/@typescript/native/bin/tsc`;
if (!existsSync(`${root}src`) || !existsSync(tsc)) {
  process.stdout.write(
    `report-etl prepare: not building dist/ (${existsSync(`${root}src`) ? 'no TypeScript installed' : 'no src/'})\n`,
  );
} else {
  const r = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    rmSync(`${root}dist/main.js`, { force: true });
    process.stderr.write('report-etl prepare: `tsc -p tsconfig.build.json` failed (above); dist/main.js removed\n');
    process.exitCode = 1;
  } else {
    process.stdout.write('report-etl prepare: built dist/ (npx report-etl runs dist/main.js)\n');
  }
}
