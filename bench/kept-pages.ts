/**
 * `npm run bench -- kept-pages`: what keeping the pages costs (docs/performance.md "Kept pages"; docs/operations.md
 * "Kept pages"). For txt and json, `--rows` (1,000,000) rows of Big.avw in pages of `--paging` (100,000) rows, served
 * pre-rendered by the page server: fresh workers (bench/lib/worker.js, the compiled product) load them in mode replace
 * without and with `target.archive`, back to back and in alternating order, `--repeats` (3) times each. Prints the
 * median duration, rows/s, peak RSS and CPU of each side, the throughput ratio, the bytes stored per MB of page (from
 * etl.attempt_pages) and the load average before and after; writes them to bench/results/<date>-kept-pages.json.
 * `--baseline DIR` (a checkout whose dist/ is built) adds a third side, that checkout's worker with `target.archive`,
 * interleaved with the other two: two builds compared run by run on a machine whose load changes. `--types json` (or
 * txt) measures one output type only.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { makePool } from '../src/app/connections.ts';
import { migrate } from '../src/history/migrate.ts';
import { silentLogger } from '../src/logger.ts';
import { measureWorker, startPageServer } from './lib/children.ts';
import { machine } from './lib/options.ts';
import { median } from './lib/report.ts';
import { LONG_RUNNING_FLAGS, NODE_FLAGS } from '../src/runtime-flags.ts';
import type { WorkerInput, WorkerResult } from './lib/worker-types.ts';

function option(name: string, fallback: string): number {
  const k = process.argv.indexOf(`--${name}`);
  const raw = k > 0 ? process.argv[k + 1] : (process.env[`BENCH_${name.toUpperCase()}`] ?? fallback);
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: expected a whole number of at least 1, got '${raw}'`);
  return n;
}
const ROWS = option('rows', '1000000');
const PAGING = option('paging', '100000');
const REPEATS = option('repeats', '3');
const typesAt = process.argv.indexOf('--types');
const TYPES = (typesAt > 0 ? (process.argv[typesAt + 1] ?? '') : 'txt,json').split(',') as ('txt' | 'json')[];
if (TYPES.some((t) => t !== 'txt' && t !== 'json')) throw new Error(`--types: txt, json or both, got '${TYPES}'`);
const REPORT = 'Big.avw';
const baselineAt = process.argv.indexOf('--baseline');
const BASELINE = baselineAt > 0 ? resolve(process.argv[baselineAt + 1] ?? '.', 'bench', 'lib', 'worker.js') : undefined;
/** The flags a `report-etl worker` process runs with (src/runtime-flags.ts): measured as it runs. */
const WORKER_FLAGS = [...NODE_FLAGS, ...LONG_RUNNING_FLAGS];
const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const log = (s: string): void => void process.stderr.write(`${s}\n`);
const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

const pool = makePool(silentLogger, databaseUrl, 2);
await migrate(pool);
const db = new pg.Client({ connectionString: databaseUrl });
await db.connect();
const schema = `bench_${randomUUID().slice(0, 8)}`;
await db.query(`CREATE SCHEMA ${schema}`);
const server = await startPageServer(0);
const loadBefore = load();
const cases: Record<string, unknown>[] = [];

/** kB stored per MB of page, and the pages' MB, of an attempt's kept pages. */
async function stored(attemptId: string): Promise<{ kBPerMB: number; pageMB: number }> {
  const { rows } = await db.query<{ bytes: string; stored: string }>(
    'SELECT sum(bytes) AS bytes, sum(stored_bytes) AS stored FROM etl.attempt_pages WHERE attempt_id = $1',
    [attemptId],
  );
  const bytes = Number(rows[0]?.bytes ?? 0);
  return { kBPerMB: (Number(rows[0]?.stored ?? 0) / bytes) * 1000, pageMB: bytes / 1e6 };
}

try {
  for (const outputType of TYPES) {
    const table = `${schema}.${outputType}`;
    const pre = await server.prerender({
      report: REPORT,
      parameters: { ROWS: String(ROWS) },
      outputType,
      paging: PAGING,
    });
    log(`${outputType}: ${pre.pages} pages, ${(pre.bytes / 1e6).toFixed(1)} MB rendered`);
    const input: WorkerInput = {
      simUrl: server.url,
      databaseUrl,
      redisUrl,
      report: REPORT,
      rows: ROWS,
      outputType,
      paging: PAGING,
      target: table,
      mode: 'replace',
    };
    const warm = await measureWorker(input, WORKER_FLAGS);
    if (!warm.ok) throw new Error(`warm-up run failed: ${warm.error}`);
    const runs: { off: WorkerResult[]; on: WorkerResult[]; base: WorkerResult[] } = { off: [], on: [], base: [] };
    const sides = BASELINE ? (['off', 'on', 'base'] as const) : (['off', 'on'] as const);
    let keptFigures = { kBPerMB: 0, pageMB: 0 };
    for (let r = 0; r < REPEATS; r++) {
      // Each side first, last and between in turn: a trend in the machine's load does not favour one.
      for (const side of [...sides.slice(r % sides.length), ...sides.slice(0, r % sides.length)]) {
        const sideInput = side === 'off' ? input : { ...input, archiveKeepDays: 1 };
        const res = await measureWorker(sideInput, WORKER_FLAGS, side === 'base' ? BASELINE : undefined);
        if (!res.ok || res.rows !== ROWS) throw new Error(`${side} run failed: ${res.error ?? `${res.rows} rows`}`);
        runs[side].push(res);
        if (side === 'on') keptFigures = await stored(res.attemptId!);
        log(
          `  ${outputType} archive ${side}: ${(res.durationMs / 1000).toFixed(2)} s, cpu ` +
            `${(res.cpuMs / 1000).toFixed(2)} s, rss ${res.maxRssKiB >> 10} MiB`,
        );
      }
    }
    const sideOf = (rs: WorkerResult[]) => ({
      ms: Math.round(median(rs.map((x) => x.durationMs))),
      rowsPerSec: Math.round(ROWS / (median(rs.map((x) => x.durationMs)) / 1000)),
      peakRssMiB: Math.round(Math.max(...rs.map((x) => x.maxRssKiB)) / 1024),
      cpuMs: Math.round(median(rs.map((x) => x.cpuMs))),
      allMs: rs.map((x) => Math.round(x.durationMs)),
    });
    const off = sideOf(runs.off);
    const on = sideOf(runs.on);
    const base = BASELINE ? sideOf(runs.base) : undefined;
    const c = {
      outputType,
      rows: ROWS,
      paging: PAGING,
      pageMB: +keptFigures.pageMB.toFixed(1),
      off,
      on,
      throughputRatio: +(on.rowsPerSec / off.rowsPerSec).toFixed(3),
      storedKBPerMB: Math.round(keptFigures.kBPerMB),
      ...(base ? { baseline: { ...base, throughputRatio: +(base.rowsPerSec / off.rowsPerSec).toFixed(3) } } : {}),
    };
    cases.push(c);
    console.log(
      `${outputType.padEnd(5)} ${ROWS} rows: without ${off.rowsPerSec} rows/s (${off.ms} ms, cpu ${off.cpuMs} ms, ` +
        `rss ${off.peakRssMiB} MiB), with ${on.rowsPerSec} rows/s (${on.ms} ms, cpu ${on.cpuMs} ms, rss ` +
        `${on.peakRssMiB} MiB): ratio ${c.throughputRatio}, ${c.storedKBPerMB} kB stored per MB of page`,
    );
    if (c.baseline)
      console.log(
        `${''.padEnd(5)} baseline with ${c.baseline.rowsPerSec} rows/s (${c.baseline.ms} ms, cpu ` +
          `${c.baseline.cpuMs} ms, rss ${c.baseline.peakRssMiB} MiB): ratio ${c.baseline.throughputRatio}`,
      );
  }
} finally {
  await server.close();
  await db.query(`DROP SCHEMA ${schema} CASCADE`);
  await db.end();
  await pool.end();
}
const loadAfter = load();
console.log(`load average before ${loadBefore}, after ${loadAfter}`);
const dir = join(import.meta.dirname, 'results');
await mkdir(dir, { recursive: true });
const stamp = new Date().toISOString().slice(0, 16).replace(':', '-');
const file = join(dir, `${stamp}-kept-pages.json`);
await writeFile(file, `${JSON.stringify({ machine: machine(), loadBefore, loadAfter, cases }, null, 2)}\n`);
log(`wrote ${file}`);
