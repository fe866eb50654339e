/**
 * `npm run bench`: end-to-end throughput and memory of report-etl against the physical limit,
 * PostgreSQL's own COPY of the same rows, measured in the same run so that a noisy machine affects both.
 *
 * For each size, output type and paging: the simulator (own process, pages rendered once into memory) serves
 * Big.avw with ROWS=<size>; a warm-up run creates the target; then `repeats` times, interleaved (1 and 2 swap
 * places every other repeat):
 *   1. e2e — a fresh worker process runs runAttempt (mode replace, plan direct: DELETE + COPY into the target in
 *      one transaction); duration from the first request to the commit, time to the first row, peak RSS;
 *   2. limit — the same rows as a CSV file, `psql \copy`ed into an identical table after deleting its equally many
 *      rows in the same transaction (what replace does, without the report-etl part);
 *   3. empty — the same \copy into an empty table;
 * and once more (`repeats` times up to 1M rows, once above) in a warm worker: a process that ran the same report
 * just before, as a long-running worker has, for rows/s without a fresh process's start.
 * Prints a table, writes bench/results/<date>-<rows>.json, and ends with one summary line.
 *
 * The document case (type pdf, bench/lib/documents.ts): --doc-mb/BENCH_DOC_MB (1000) MB of pdf pages of
 * --doc-page-mb/BENCH_DOC_PAGE_MB (200) MB each, archived as bytea, against psql's \copy of the same bytes.
 *
 * Options (argv or env): --rows/BENCH_ROWS (1000000), --types/BENCH_TYPES
 * (txt,json,json_compact,xml_query,txt_cstr,pdf), --paging/BENCH_PAGING (100000,all), --repeats/BENCH_REPEATS (3),
 * --sizes/BENCH_SIZES (growth check, 100000; BENCH_FULL=1 adds 5000000), --worker-args/BENCH_WORKER_ARGS (node flags of
 * the worker, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"), --variants/BENCH_VARIANTS (other builds or flags measured in
 * the same repeats, interleaved, e.g. `main=/tmp/main;flag=.|--max-semi-space-size=1 --heap-growing-percent=100`; see
 * bench/lib/options.ts), --warm/BENCH_WARM (1; 0 skips the warm workers).
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { makePool } from '../src/app/connections.ts';
import { silentLogger } from '../src/logger.ts';
import { migrate } from '../src/history/migrate.ts';
import { measureWorker, startPageServer } from './lib/children.ts';
import { copyEmpty, copyReplace, dumpCsv } from './lib/limit.ts';
import { machine, readOptions } from './lib/options.ts';
import { levelLine, median, short, summary, table, type CaseResult } from './lib/report.ts';
import type { WorkerInput } from './lib/worker-types.ts';
import { documentCase } from './lib/documents.ts';
import { cliPeakRss, fixedCost, writeJobs } from './lib/cli-cases.ts';
import { userPath, type UserPathResult } from './lib/report.ts';

// `npm run bench -- fleet`: the fleet benchmark instead (bench/fleet.ts, its own options);
// `npm run bench -- user-path`: the README's path alone (bench/user-path.ts); `npm run bench -- append-lineage`: what
// an append target's lineage columns cost COPY (bench/append-lineage.ts); `npm run bench -- tracing`: what traces cost
// (bench/tracing.ts); `npm run bench -- warm-up`: where a fresh worker's first run spends its extra time
// (bench/warm-up.ts); `npm run bench -- kept-pages`: what keeping the pages costs (bench/kept-pages.ts);
// `npm run bench -- real-data`: 24 real datasets loaded fresh and into existing tables (bench/real-data-trial.ts).
const OTHER_BENCHES: Record<string, string> = {
  fleet: './fleet.ts',
  'user-path': './user-path.ts',
  'append-lineage': './append-lineage.ts',
  tracing: './tracing.ts',
  'warm-up': './warm-up.ts',
  'kept-pages': './kept-pages.ts',
  'real-data': './real-data-trial.ts',
};
if (process.argv[2] !== undefined && OTHER_BENCHES[process.argv[2]]) {
  await import(OTHER_BENCHES[process.argv[2]]!);
  process.exit(process.exitCode ?? 0);
}

const REPORT = 'Big.avw';
const opts = readOptions();
const log = (s: string): void => void process.stderr.write(`${s}\n`);

const pool = makePool(silentLogger, opts.databaseUrl, 2);
await migrate(pool);
await pool.end();
const db = new pg.Client({ connectionString: opts.databaseUrl });
await db.connect();
const schema = `bench_${randomUUID().slice(0, 8)}`;
await db.query(`CREATE SCHEMA ${schema}`);
const csvDir = join(tmpdir(), schema);
await mkdir(csvDir, { recursive: true });
const server = await startPageServer(opts.latencyMs);
const results: CaseResult[] = [];
let user: UserPathResult | undefined;
const started = Date.now();

try {
  for (const size of opts.sizes) {
    const pagings = size === opts.rows ? opts.paging : [opts.paging[0]!];
    for (const outputType of opts.types) {
      if (outputType === 'pdf') continue;
      const table = `${schema}.${outputType}_${size}`;
      const csv = join(csvDir, `${outputType}_${size}.csv`);
      let csvBytes = 0;
      for (const [pi, pagingOpt] of pagings.entries()) {
        const paging = pagingOpt === 'all' ? size : pagingOpt;
        const pre = await server.prerender({ report: REPORT, parameters: { ROWS: String(size) }, outputType, paging });
        log(
          `${short(size)} ${outputType} paging ${pagingOpt}: ${pre.pages} pages, ${(pre.bytes / 1e6).toFixed(1)} MB ` +
            `rendered in ${(pre.ms / 1000).toFixed(1)} s`,
        );
        const input: WorkerInput = {
          simUrl: server.url,
          databaseUrl: opts.databaseUrl,
          redisUrl: opts.redisUrl,
          report: REPORT,
          rows: size,
          outputType,
          paging,
          target: table,
          mode: opts.mode,
        };
        if (pi === 0) {
          const warm = await measureWorker(input);
          if (!warm.ok) throw new Error(`warm-up run failed: ${warm.error}`);
          csvBytes = await dumpCsv(db, table, csv);
        }
        // This checkout's worker first, then the variants' (--variants), each measured in every repeat.
        const workers = [
          { label: '', worker: undefined as string | undefined, args: opts.workerArgs },
          ...opts.variants,
        ];
        const runs: CaseResult['runs'][] = workers.map(() => []);
        let bytes = 0;
        for (let r = 0; r < opts.repeats; r++) {
          // Alternate the order, so that a slow spell of the machine does not always hit the same side.
          const limitFirst = r % 2 === 1;
          const limFirst = limitFirst ? await copyReplace(opts.databaseUrl, table, csv) : undefined;
          const e2es: { k: number; e2e: Awaited<ReturnType<typeof measureWorker>> }[] = [];
          for (let j = 0; j < workers.length; j++) {
            const k = (j + r) % workers.length;
            // append: start from an empty target, as the COPY into an empty table it is compared with.
            if (opts.mode === 'append') await db.query(`TRUNCATE ${table}`);
            const e2e = await measureWorker(input, workers[k]!.args, workers[k]!.worker);
            if (!e2e.ok) throw new Error(`run failed: ${e2e.error}`);
            if (e2e.rows !== size || e2e.plan !== 'direct')
              throw new Error(`run loaded ${e2e.rows} rows with plan ${e2e.plan}; expected ${size}, direct`);
            bytes = e2e.bytes;
            e2es.push({ k, e2e });
          }
          const lim = limFirst ?? (await copyReplace(opts.databaseUrl, table, csv));
          const emp = await copyEmpty(db, opts.databaseUrl, table, csv);
          if (lim.rows !== size || emp.rows !== size)
            throw new Error(`limit COPY took ${lim.rows}/${emp.rows} rows, expected ${size}`);
          for (const { k, e2e } of e2es.sort((a, b) => a.k - b.k)) {
            const run = {
              e2eMs: e2e.durationMs,
              limitMs: lim.durationMs,
              emptyCopyMs: emp.durationMs,
              firstRowMs: e2e.firstRowMs,
              rssMB: (e2e.maxRssKiB * 1024) / 1e6,
              baseRssMB: (e2e.baseRssKiB * 1024) / 1e6,
              peaks: e2e.peaks,
              cpuMs: e2e.cpuMs,
            };
            runs[k]!.push(run);
            const name = workers[k]!.label ? ` ${workers[k]!.label}` : '';
            const s = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
            const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(0)} MB`;
            log(
              `  run ${r + 1}${name}: e2e ${s(run.e2eMs)}, limit ${s(run.limitMs)}, empty ${s(run.emptyCopyMs)}, ` +
                `first row ${Math.round(run.firstRowMs)} ms, worker CPU ${s(run.cpuMs)}, RSS ${mb(run.rssMB * 1e6)} ` +
                `(${mb(run.baseRssMB * 1e6)} before the run; peak heap ${mb(run.peaks.heapTotal)}, ` +
                `external ${mb(run.peaks.external)})`,
            );
          }
        }
        // The same run in a warm worker (one unmeasured run of the same report before it, in the same process): the
        // rows/s of a long-running worker, without a fresh process's start (cold modules and connections, V8 warm-up).
        const warmRowsPerSec: number[][] = workers.map(() => []);
        if (pi === 0 && opts.warm) {
          for (let r = 0; r < (size <= 1_000_000 ? opts.repeats : 1); r++) {
            for (let j = 0; j < workers.length; j++) {
              const k = (j + r) % workers.length;
              // append: the target holds only the warm-up's rows when the measured run appends, not earlier repeats'.
              if (opts.mode === 'append') await db.query(`TRUNCATE ${table}`);
              const warm = await measureWorker({ ...input, warmups: 1 }, workers[k]!.args, workers[k]!.worker);
              if (!warm.ok || warm.rows !== size || warm.plan !== 'direct')
                throw new Error(`warm run failed: ${warm.error ?? `${warm.rows} rows, plan ${warm.plan}`}`);
              warmRowsPerSec[k]!.push((size / warm.durationMs) * 1000);
            }
          }
          for (const [k, w] of workers.entries())
            log(
              `  warm worker${w.label ? ` ${w.label}` : ''}: ${warmRowsPerSec[k]!.map(Math.round).join(', ')} rows/s`,
            );
        }
        for (const [k, w] of workers.entries()) {
          const mine = runs[k]!;
          const e2eMs = median(mine.map((x) => x.e2eMs));
          const limitMs = median(mine.map((x) => x.limitMs));
          const emptyCopyMs = median(mine.map((x) => x.emptyCopyMs));
          results.push({
            rows: size,
            outputType: w.label ? `${outputType}@${w.label}` : outputType,
            paging: pagingOpt,
            pages: pre.pages,
            bytes,
            csvBytes,
            e2eMs,
            limitMs,
            emptyCopyMs,
            firstRowMs: median(mine.map((x) => x.firstRowMs)),
            rowsPerSec: (size / e2eMs) * 1000,
            ...(warmRowsPerSec[k]!.length > 0 ? { warmRowsPerSec: median(warmRowsPerSec[k]!) } : {}),
            limitRowsPerSec: (size / (opts.mode === 'append' ? emptyCopyMs : limitMs)) * 1000,
            mbPerSec: bytes / 1e6 / (e2eMs / 1000),
            ratio: (opts.mode === 'append' ? emptyCopyMs : limitMs) / e2eMs,
            ratioEmpty: emptyCopyMs / e2eMs,
            rssMB: median(mine.map((x) => x.rssMB)),
            rssMaxMB: Math.max(...mine.map((x) => x.rssMB)),
            baseRssMB: median(mine.map((x) => x.baseRssMB)),
            cpuMs: median(mine.map((x) => x.cpuMs)),
            runs: mine,
          });
        }
      }
      await db.query(`DROP TABLE IF EXISTS ${table}, ${table}_lim, ${table}_empty`);
      await rm(csv, { force: true });
    }
  }
  if (opts.types.includes('pdf')) results.push(await documentCase({ db, server, opts, schema, dir: csvDir, log }));
  if (opts.cli) user = await userPathCases();
} finally {
  await server.close();
  await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
  await db.end();
  await rm(csvDir, { recursive: true, force: true });
}

const line =
  summary(results, opts.rows, opts.paging[0]!, opts.mode) +
  (user ? `; ${userPath(user)}` : '') +
  levelLine(results, opts.paging[0]!);
const date = new Date().toISOString().replaceAll(':', '-').slice(0, 16);
const file = join(import.meta.dirname, 'results', `${date}-${short(opts.rows)}.json`);
await mkdir(join(import.meta.dirname, 'results'), { recursive: true });
await writeFile(
  file,
  JSON.stringify(
    {
      date: new Date().toISOString(),
      machine: machine(),
      options: { ...opts, databaseUrl: undefined, redisUrl: undefined },
      seconds: Math.round((Date.now() - started) / 1000),
      summary: line,
      results,
      userPath: user,
    },
    null,
    2,
  ) + '\n',
);
process.stdout.write(`${table(results)}\n\nresults: ${file}\n${line}\n`);

/**
 * The user's path: the fixed cost of a 10-row run as a whole `report-etl run` process (the README's
 * command, with the recommended 250 ms first poll) and inside a warm worker (polls of 1 ms, so the time is report-etl's
 * own plus the local servers' answers), and the peak RSS of the README's command on a run of opts.rows txt rows.
 */
async function userPathCases(): Promise<UserPathResult> {
  const ctx = { simUrl: server.url, databaseUrl: opts.databaseUrl, redisUrl: opts.redisUrl, schema, dir: csvDir };
  const config = await writeJobs(ctx, opts.rows);
  const cost = await fixedCost(ctx, config, 7);
  log(
    `10-row run, whole process (report-etl run): median ${Math.round(cost.medianMs)} ms ` +
      `(${Math.round(cost.minMs)}-${Math.round(cost.maxMs)} of 7), RSS ${cost.rssMB.toFixed(0)} MB`,
  );
  const warm: { ms: number; cpuMs: number }[] = [];
  for (let i = 0; i < 7; i++) {
    const input: WorkerInput = {
      simUrl: server.url,
      databaseUrl: opts.databaseUrl,
      redisUrl: opts.redisUrl,
      report: REPORT,
      rows: 10,
      outputType: 'json',
      paging: 10,
      target: `${schema}.warm_small`,
      mode: 'replace',
      warmups: 2,
    };
    const r = await measureWorker(input, opts.workerArgs);
    if (!r.ok) throw new Error(`warm 10-row run failed: ${r.error}`);
    warm.push({ ms: r.durationMs, cpuMs: r.cpuMs });
  }
  const warmMs = warm.map((w) => w.ms);
  log(
    `10-row run, warm worker: median ${median(warmMs).toFixed(1)} ms ` +
      `(${Math.min(...warmMs).toFixed(1)}-${Math.max(...warmMs).toFixed(1)} of 7), CPU ` +
      `${median(warm.map((w) => w.cpuMs)).toFixed(1)} ms`,
  );
  // 100k txt rows in a warm worker (one unmeasured run before): a long-running worker's rows/s for a mid-sized report,
  // without the first run's start-up that the fresh-process cases above include.
  await server.prerender({ report: REPORT, parameters: { ROWS: '100000' }, outputType: 'txt', paging: 100_000 });
  const warm100k: number[] = [];
  for (let i = 0; i < 3; i++) {
    const input: WorkerInput = {
      simUrl: server.url,
      databaseUrl: opts.databaseUrl,
      redisUrl: opts.redisUrl,
      report: REPORT,
      rows: 100_000,
      outputType: 'txt',
      paging: 100_000,
      target: `${schema}.warm_100k`,
      mode: 'replace',
      warmups: 1,
    };
    const r = await measureWorker(input, opts.workerArgs);
    if (!r.ok) throw new Error(`warm 100k run failed: ${r.error}`);
    warm100k.push((100_000 / r.durationMs) * 1000);
  }
  log(
    `100k txt rows, warm worker: median ${Math.round(median(warm100k))} rows/s ` +
      `(${warm100k.map((x) => Math.round(x)).join(', ')})`,
  );
  // The same 100k rows through `report-etl run`, whole process: with the 10-row run's time, the rows/s a fresh
  // process adds per row (marginal), to compare with the big run's below.
  const mid = await cliPeakRss(ctx, config, 3, 'mid');
  log(`100k txt rows through report-etl run: ${mid.ms.map((x) => (x / 1000).toFixed(2)).join(', ')} s`);
  await server.prerender({
    report: REPORT,
    parameters: { ROWS: String(opts.rows) },
    outputType: 'txt',
    paging: 100_000,
  });
  const big = await cliPeakRss(ctx, config, 3);
  log(
    `${short(opts.rows)} txt rows through report-etl run: peak RSS ${big.rssMB.map((x) => x.toFixed(0)).join(', ')} ` +
      `MB, ${big.ms.map((x) => (x / 1000).toFixed(2)).join(', ')} s`,
  );
  return {
    wholeProcessMs: { median: cost.medianMs, min: cost.minMs, max: cost.maxMs },
    warmWorkerMs: { median: median(warmMs), min: Math.min(...warmMs), max: Math.max(...warmMs) },
    warmWorkerCpuMs: median(warm.map((w) => w.cpuMs)),
    warm100kRowsPerSec: median(warm100k),
    cliRows: opts.rows,
    cliPeakRssMB: big.rssMB,
    cliSeconds: big.ms.map((x) => x / 1000),
    cli100kSeconds: mid.ms.map((x) => x / 1000),
  };
}
