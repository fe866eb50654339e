/**
 * The measured worker of `npm run bench` (bench/run.ts): one fresh process per measurement, so that its peak
 * RSS is its own. Runs runJob once (mode replace into `target`) against the page server and sends one
 * {@link WorkerResult} to the parent over IPC, then exits.
 *
 * Input: argv[2] is a JSON {@link WorkerInput}. Time to the first row is taken from the loader's 'loading' log
 * line, which copy-load.ts writes once the first rows are decoded, right before COPY starts.
 */
import { pino } from 'pino';
import { configSchema } from '../../src/config/schema.ts';
import { makePool, makeRedis } from '../../src/connections.ts';
import { silentLogger } from '../../src/logger.ts';
import { runJob } from '../../src/pipeline/run-job.ts';

/** What the parent asks for. */
export interface WorkerInput {
  simUrl: string;
  databaseUrl: string;
  redisUrl: string;
  /** Report path, e.g. 'Big.avw'. */
  report: string;
  rows: number;
  outputType: 'txt' | 'json' | 'json_compact' | 'xml_query';
  paging: number;
  /** schema.table */
  target: string;
  mode: 'replace' | 'append';
}

/** What one measurement gives. */
export interface WorkerResult {
  ok: boolean;
  error?: string;
  plan?: string;
  rows: number;
  pages: number;
  /** Page bytes downloaded. */
  bytes: number;
  /** From just before runJob (first request) until it returned after COMMIT, in ms. */
  durationMs: number;
  /** From the same start until the loader began its COPY with the first decoded rows, in ms. */
  firstRowMs: number;
  /** process.resourceUsage().maxRSS at the end, in KiB. */
  maxRssKiB: number;
  /** CPU time (user + system) of the worker during runJob, in ms. */
  cpuMs: number;
  /** maxRSS just before runJob (the modules loaded, nothing run), in KiB. */
  baseRssKiB: number;
  /** Peaks of process.memoryUsage() sampled every 50 ms during the run, in bytes. */
  peaks: { heapTotal: number; heapUsed: number; external: number; arrayBuffers: number };
}

async function main(): Promise<void> {
  const input = JSON.parse(process.argv[2]!) as WorkerInput;
  let firstRowAt = NaN;
  let t0 = 0;
  const logger = pino(
    { level: 'info' },
    {
      write(line: string) {
        if (process.env.BENCH_WORKER_LOG === '1') process.stderr.write(line);
        if (Number.isNaN(firstRowAt) && line.includes('"msg":"loading"')) firstRowAt = performance.now();
      },
    },
  );
  const config = configSchema.parse({
    connections: {
      sim: { baseUrl: input.simUrl, clientId: 'demo-client', clientSecret: 'demo-secret', timezone: 'Europe/Zurich', pollIntervalMs: 1, pollMaxIntervalMs: 20 },
    },
    jobs: {
      bench: {
        connection: 'sim',
        report: { mandant: 7777, name: input.report.replace(/\.avw$/, ''), outputType: input.outputType, paging: input.paging, parameters: { ROWS: String(input.rows) } },
        target: { table: input.target, mode: input.mode },
      },
    },
  });
  const pool = makePool(silentLogger, input.databaseUrl, 2);
  const redis = makeRedis(silentLogger, input.redisUrl);
  let result: WorkerResult;
  const baseRssKiB = process.resourceUsage().maxRSS;
  const peaks = { heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 };
  const sample = (): void => {
    const m = process.memoryUsage();
    for (const k of ['heapTotal', 'heapUsed', 'external', 'arrayBuffers'] as const) peaks[k] = Math.max(peaks[k], m[k]);
  };
  const sampler = setInterval(sample, 50);
  let cpu0 = process.cpuUsage();
  const cpuMs = (): number => {
    const c = process.cpuUsage(cpu0);
    return (c.user + c.system) / 1000;
  };
  try {
    t0 = performance.now();
    cpu0 = process.cpuUsage();
    const r = await runJob({ config, job: 'bench', pool, redis, logger });
    const durationMs = performance.now() - t0;
    result = { ok: true, plan: r.plan, rows: r.rows, pages: r.pages, bytes: r.bytes, durationMs, firstRowMs: firstRowAt - t0, maxRssKiB: process.resourceUsage().maxRSS, baseRssKiB, peaks, cpuMs: cpuMs() };
  } catch (err) {
    result = { ok: false, error: String((err as Error).message), rows: 0, pages: 0, bytes: 0, durationMs: performance.now() - t0, firstRowMs: NaN, maxRssKiB: process.resourceUsage().maxRSS, baseRssKiB, peaks, cpuMs: cpuMs() };
  }
  clearInterval(sampler);
  await pool.end();
  redis.disconnect();
  process.send!(result, () => process.exit(0));
}

await main();
