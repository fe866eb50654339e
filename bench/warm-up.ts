/**
 * `npm run bench -- warm-up`: where a fresh worker's first run spends the time a warm worker does not. For each output
 * type, the same 100k-row report (one page, pre-rendered by the page server) is loaded `repeats` times by a fresh
 * worker process (its first run) and by a warm one (one unmeasured run of the same report before, in the same process),
 * interleaved. Each measured attempt's timeline (etl.attempts.timeline, docs/observability.md "Tracing") splits its
 * time into the attempt's steps and, for the pages, into waiting for the network, decoding and COPY; the table gives
 * the medians of fresh and warm side by side, and what the fresh worker spends outside the attempt (before its first
 * step).
 *
 * Options (argv `--name value` or env): --repeats/BENCH_REPEATS (5), --rows/BENCH_ROWS (100000),
 * --types/BENCH_TYPES (txt,json,xml_query), --worker-args/BENCH_WORKER_ARGS (node flags of the measured worker;
 * default a worker's, src/runtime-flags.ts), --baseline/BENCH_BASELINE DIR: also a fresh worker of another
 * checkout's build (DIR/bench/lib/worker.js and DIR/dist, built) in every repeat, to compare builds under the same load
 * (split by its timeline when its worker says the attempt's id, else only its total and CPU).
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makePool } from '../src/app/connections.ts';
import { migrate } from '../src/history/migrate.ts';
import { silentLogger } from '../src/logger.ts';
import { LONG_RUNNING_FLAGS, NODE_FLAGS } from '../src/runtime-flags.ts';
import { TIMELINE_STEPS, type AttemptTimeline } from '../src/history/timeline.ts';
import { measureWorker, startPageServer } from './lib/children.ts';
import { arg, count } from './lib/options.ts';
import { median } from './lib/report.ts';
import type { WorkerInput } from './lib/worker-types.ts';

const option = (name: string, fallback: string): string => arg(process.argv, name) ?? fallback;
const whole = (name: string, fallback: string): number => count(option(name, fallback), `--${name}`);
const REPEATS = whole('repeats', '5');
const ROWS = whole('rows', '100000');
const TYPES = option('types', 'txt,json,xml_query').split(',') as WorkerInput['outputType'][];
const WORKER_ARGS = option('worker-args', [...NODE_FLAGS, ...LONG_RUNNING_FLAGS].join(' '))
  .split(' ')
  .filter(Boolean);
const BASELINE_DIR = option('baseline', '');
const BASELINE = BASELINE_DIR ? join(BASELINE_DIR, 'bench', 'lib', 'worker.js') : undefined;
const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const log = (s: string): void => void process.stderr.write(`${s}\n`);

/** One measured attempt, split as its timeline says, in ms. */
type Split = Record<string, number>;

function split(durationMs: number, cpuMs: number, t: AttemptTimeline | undefined): Split {
  const out: Split = { total: durationMs, cpu: cpuMs };
  if (!t) return out;
  out['before the attempt'] = durationMs - t.ms;
  for (const name of TIMELINE_STEPS) out[name] = 0;
  for (const s of t.steps) out[s.step] = (out[s.step] ?? 0) + s.ms;
  out['pages: network'] = 0;
  out['pages: decoding'] = 0;
  out['pages: COPY'] = 0;
  for (const p of t.pages) {
    out['pages: network'] += p.net;
    out['pages: decoding'] += p.decode;
    out['pages: COPY'] += p.copy;
  }
  return out;
}

const pool = makePool(silentLogger, databaseUrl, 2);
await migrate(pool);
const schema = `bench_${randomUUID().slice(0, 8)}`;
await pool.query(`CREATE SCHEMA ${schema}`);
const server = await startPageServer();
const loadBefore = loadavg()[0]!;
const results: { type: string; fresh: Split[]; warm: Split[]; baseline: Split[] }[] = [];
let text = '';
try {
  for (const outputType of TYPES) {
    await server.prerender({
      report: 'Big.avw',
      parameters: { ROWS: String(ROWS) },
      outputType: outputType as 'txt',
      paging: ROWS,
    });
    const input: WorkerInput = {
      simUrl: server.url,
      databaseUrl,
      redisUrl,
      report: 'Big.avw',
      rows: ROWS,
      outputType,
      paging: ROWS,
      target: `${schema}.${outputType}`,
      mode: 'replace',
    };
    const created = await measureWorker(input, WORKER_ARGS);
    if (!created.ok) throw new Error(`${outputType}: the run that creates the target failed: ${created.error}`);
    const fresh: Split[] = [];
    const warm: Split[] = [];
    const baseline: Split[] = [];
    const measure = async (warmups: number, into: Split[], worker?: string): Promise<void> => {
      const r = await measureWorker({ ...input, warmups }, WORKER_ARGS, worker);
      if (!r.ok || r.rows !== ROWS)
        throw new Error(`${outputType}: measured run failed: ${r.error ?? `${r.rows} rows`}`);
      const t = r.attemptId
        ? (
            await pool.query<{ timeline: AttemptTimeline }>('SELECT timeline FROM etl.attempts WHERE attempt_id = $1', [
              r.attemptId,
            ])
          ).rows[0]?.timeline
        : undefined;
      into.push(split(r.durationMs, r.cpuMs, t));
    };
    for (let i = 0; i < REPEATS; i++) {
      const order: [number, Split[], string?][] = [
        [0, fresh],
        [1, warm],
        ...(BASELINE ? [[0, baseline, BASELINE] as [number, Split[], string]] : []),
      ];
      for (const [warmups, into, worker] of i % 2 === 0 ? order : order.reverse()) await measure(warmups, into, worker);
      log(
        `${outputType}: fresh ${fresh.at(-1)!.total!.toFixed(0)} ms, ` +
          `warm ${warm.at(-1)!.total!.toFixed(0)} ms` +
          (BASELINE ? `, baseline fresh ${baseline.at(-1)!.total!.toFixed(0)} ms` : ''),
      );
    }
    results.push({ type: outputType, fresh, warm, baseline });
    const keys = Object.keys(fresh[0]!).filter(
      (k) => fresh.some((s) => s[k]! >= 0.5) || warm.some((s) => s[k]! >= 0.5),
    );
    const med = (xs: Split[], k: string): string =>
      xs.length > 0 && k in xs[0]! ? median(xs.map((s) => s[k]!)).toFixed(1) : '';
    const lines = keys.map(
      (k) =>
        `| ${k} | ${med(fresh, k)} | ${med(warm, k)} | ` +
        `${(Number(med(fresh, k)) - Number(med(warm, k))).toFixed(1)} |${BASELINE ? ` ${med(baseline, k)} |` : ''}`,
    );
    const rate = (xs: Split[]): string =>
      `${Math.round(ROWS / (median(xs.map((s) => s.total!)) / 1000) / 1000)}k rows/s`;
    text +=
      `\n${outputType}, ${ROWS} rows, medians of ${REPEATS} (ms): fresh ${rate(fresh)}, ` +
      `warm ${rate(warm)}${BASELINE ? `, baseline fresh ${rate(baseline)}` : ''}\n\n`;
    text +=
      `| part | fresh | warm | fresh − warm |${BASELINE ? ' baseline fresh |' : ''}\n` +
      `|---|---|---|---|${BASELINE ? '---|' : ''}\n${lines.join('\n')}\n`;
  }
} finally {
  await server.close();
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
  await pool.end();
}
const date = new Date().toISOString().replaceAll(':', '-').slice(0, 16);
const file = join(import.meta.dirname, 'results', `${date}-warm-up.json`);
await mkdir(join(import.meta.dirname, 'results'), { recursive: true });
const load = `load average ${loadBefore.toFixed(2)} before, ${loadavg()[0]!.toFixed(2)} after`;
await writeFile(
  file,
  JSON.stringify(
    {
      date: new Date().toISOString(),
      rows: ROWS,
      baseline: BASELINE_DIR || null,
      repeats: REPEATS,
      workerArgs: WORKER_ARGS,
      load,
      results,
    },
    null,
    2,
  ) + '\n',
);
const LEGEND = [
  'How to read the rows (they overlap, so they do not add up to total):',
  "- total: runAttempt's wall time; cpu: the process's CPU time in it, which exceeds total when V8's compiler and",
  "  garbage-collector threads work beside the main thread (a fresh process's warm-up shows there);",
  "- the attempt's steps (its timeline): load holds target_delete (a replace's DELETE), copy (from COPY's start to its",
  '  end) and commit; rows are decoded while the DELETE runs, so decoding overlaps target_delete and copy;',
  "- pages: each page's reading split into waiting for the network, decoding here, and waiting for PostgreSQL to take",
  '  the rows (pages: COPY), which is part of the copy step, not all of it.',
].join('\n');
process.stdout.write(`${text}\n${LEGEND}\n\n${load}\nresults: ${file}\n`);
