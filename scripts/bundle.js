// Bundles the compiled build (dist/, from `tsc -p tsconfig.build.json`) into dist/bundle/ (issue 14: start-up cost).
// Plain JavaScript, like prepare-build.js, which runs it.
//
// Why: Node's module loader costs about as much per file as the code in it. A 10-row `report-etl run` loaded 430
// files (our modules, and zod, pg, ioredis, pino, yaml, commander with theirs); the bundle, with a chunk per lazily
// imported part (rolldown keeps every `import()` a chunk of its own), loads 64 and finishes about 50 ms sooner
// (0.51 -> 0.46 s), and every other command starts sooner likewise. dist/ itself stays as tsc wrote it: the bench's
// worker imports single modules from it.
//
// What is bundled: report-etl's own code and every package it reaches, except those in EXTERNAL: they stay imports
// resolved in node_modules at run time, as without the bundle. Those are the large ones only some commands load
// (the admin server, the queue, the simulator's documents) and the ones that read files beside their own code
// (pdfkit's fonts, bull-board's pages), which a bundle would not carry along. Of undici, only the Agent and the
// request API are imported (src/report-api/undici-core.ts), and only those are bundled.
import { rmSync, statSync, utimesSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Packages left out of the bundle (with everything only they import). */
export const EXTERNAL = ['bullmq', 'fastify', '@bull-board/api', '@bull-board/fastify', 'exceljs', 'pdfkit', 'docx', 'prom-client'];

/**
 * Bundles the compiled entry `from` into the directory `out` (default dist/main.js into dist/bundle/). Chunks keep
 * their module's name (`run-attempt.js`), so that a stack trace still says where it was; each has a source map.
 * @param {string} root the package directory, ending in a slash
 * @param {{ from?: string, out?: string }} [paths] relative to `root`; `out` must lie two levels below it, as
 *   dist/bundle/ does (package.json and migrations/ are found as `../../`)
 * @returns {Promise<void>}
 * @throws the bundler's error, after removing `out` (the bin then runs dist/main.js)
 */
export async function bundle(root, paths = {}) {
  const input = `${root}${paths.from ?? 'dist/main.js'}`;
  const out = `${root}${paths.out ?? 'dist/bundle'}`;
  rmSync(out, { recursive: true, force: true });
  const { build } = await import('rolldown');
  try {
    await build({
      input,
      platform: 'node',
      external: (id) => EXTERNAL.some((p) => id === p || id.startsWith(`${p}/`)),
      logLevel: 'warn',
      output: { dir: out, format: 'esm', sourcemap: true, entryFileNames: '[name].js', chunkFileNames: '[name].js' },
    });
  } catch (err) {
    rmSync(out, { recursive: true, force: true });
    throw err;
  }
  // The bundle is as new as what it was made from (bin/entry-choice.js compares times): a source saved while it was
  // being bundled is newer than it, so the bin runs the sources until the next build.
  const { atime, mtime } = statSync(input);
  utimesSync(`${out}/main.js`, atime, mtime);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await bundle(fileURLToPath(new URL('..', import.meta.url)));
}
