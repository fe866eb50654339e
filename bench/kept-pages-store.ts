/**
 * How fast the page archive stores pages by itself (src/pipeline/page-archive.ts; docs/performance.md "Kept pages"):
 * one page of Big.avw (`--rows`, 100,000 rows, json or `--type txt`) from the simulator, handed to the compiled
 * product's makePageArchive (dist/, `npm run build` first) `--pages` (10) times as the pages of one attempt, in slices
 * of 64 KiB as an HTTP body arrives, with nothing else to do. Prints the wall time and the process's CPU (all its
 * threads) of each pass and their medians over `--repeats` (3). `--baseline DIR` (a checkout whose dist/ is built)
 * passes that build's archive in turn with this one's. Needs DATABASE_URL; the attempt it records is deleted after.
 * Run: npx node bench/kept-pages-store.ts [--type json|txt] [--rows N] [--pages N] [--repeats N] [--baseline DIR]
 */
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { makePool } from '../src/app/connections.ts';
import { insertAttempt } from '../src/history/attempts.ts';
import { migrate } from '../src/history/migrate.ts';
import { silentLogger } from '../src/logger.ts';
import type { makePageArchive as MakePageArchive } from '../src/pipeline/page-archive.ts';
import { startSimulator } from '../src/simulator/index.ts';
import { median } from './lib/report.ts';
import { firstBigPage, simulatorHeaders } from './lib/simulator-page.ts';

const arg = (name: string): string | undefined => {
  const k = process.argv.indexOf(`--${name}`);
  return k > 0 ? process.argv[k + 1] : undefined;
};
const count = (name: string, fallback: number): number => {
  const n = Number(arg(name) ?? fallback);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: expected a whole number of at least 1`);
  return n;
};
const TYPE = arg('type') ?? 'json';
const ROWS = count('rows', 100_000);
const PAGES = count('pages', 10);
const REPEATS = count('repeats', 3);
const SLICE = 64 * 1024;
const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const archiveOf = async (dir: string): Promise<typeof MakePageArchive> =>
  ((await import(pathToFileURL(resolve(dir, 'dist/pipeline/page-archive.js')).href)) as { makePageArchive: never })
    .makePageArchive;
const sides: [string, typeof MakePageArchive][] = [['this build', await archiveOf(resolve(import.meta.dirname, '..'))]];
if (arg('baseline')) sides.push(['baseline', await archiveOf(arg('baseline')!)]);

/** One page as the simulator serves it. */
async function servedPage(): Promise<Buffer> {
  const sim = await startSimulator({ jobDurationMs: 0 });
  try {
    return await firstBigPage(sim.url, await simulatorHeaders(sim.url), TYPE, ROWS);
  } finally {
    await sim.close();
  }
}

const page = await servedPage();
const pool = makePool(silentLogger, databaseUrl, 2);
await migrate(pool);
const job = `bench-kept-store-${randomUUID().slice(0, 8)}`;
const attemptId = randomUUID();
await insertAttempt(pool, {
  attemptId,
  job,
  runKey: job,
  trigger: 'manual',
  targetTable: 'bench.kept_store',
  writeMode: 'replace',
  worker: 'bench',
});
const times: Record<string, { ms: number[]; cpuMs: number[] }> = {};
try {
  process.stderr.write(`${TYPE}: ${PAGES} pages of ${(page.length / 1e6).toFixed(1)} MB\n`);
  for (let r = 0; r < REPEATS; r++) {
    for (const [name, makePageArchive] of r % 2 === 0 ? sides : [...sides].reverse()) {
      const archive = makePageArchive({
        pool,
        attemptId,
        outputType: TYPE,
        keepDays: 1,
        announced: { pages: PAGES },
        logger: silentLogger,
      });
      const t0 = performance.now();
      const cpu0 = process.cpuUsage();
      await archive.begin();
      for (let p = 1; p <= PAGES; p++) {
        const sink = archive.page(p, TYPE === 'json' ? 'application/json' : 'text/plain');
        for (let at = 0; at < page.length; at += SLICE) await sink.write(page.subarray(at, at + SLICE));
        await sink.end();
      }
      await archive.complete();
      await archive.close();
      const ms = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      (times[name] ??= { ms: [], cpuMs: [] }).ms.push(ms);
      times[name].cpuMs.push((cpu.user + cpu.system) / 1000);
      process.stderr.write(`  ${name}: ${ms.toFixed(0)} ms, cpu ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms\n`);
    }
  }
} finally {
  await pool.query('DELETE FROM etl.attempts WHERE attempt_id = $1', [attemptId]);
  await pool.query('DELETE FROM etl.runs WHERE job = $1', [job]);
  await pool.end();
}
const mb = (page.length * PAGES) / 1e6;
for (const [name, t] of Object.entries(times))
  console.log(
    `${name}: ${mb.toFixed(0)} MB of ${TYPE} pages stored in ${median(t.ms).toFixed(0)} ms (median of ` +
      `${t.ms.map((x) => x.toFixed(0)).join(', ')}; ${(mb / (median(t.ms) / 1000)).toFixed(0)} MB/s), cpu ` +
      `${median(t.cpuMs).toFixed(0)} ms`,
  );
