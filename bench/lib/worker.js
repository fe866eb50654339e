// The measured worker of `npm run bench` (bench/run.ts): one fresh process per measurement, so that its peak RSS
// is its own. It runs the compiled product (dist/, built by `npm run bench` first), as the Docker image does.
// Runs runAttempt once (after input.warmups unmeasured runs) against the page server and sends one WorkerResult
// (bench/lib/worker-types.ts) to the parent over IPC, then exits. Input: argv[2] is a JSON WorkerInput. Time to the
// first row is taken from the loader's 'loading' log line, which copy-load.ts writes once the first rows are decoded,
// right before COPY starts. The product's processes enable Node's compile cache before loading their modules
// (src/main.ts): so does this one, so that a measurement does not pay compiling every module, which no report-etl
// process does after its first start.
import { enableCompileCache } from 'node:module';

enableCompileCache?.();
const { pino } = await import('pino');
const { configSchema } = await import('../../dist/config/schema.js');
const { makePool, makeRedis } = await import('../../dist/app/connections.js');
const { silentLogger } = await import('../../dist/logger.js');
const { resolveJob } = await import('../../dist/config/load.js');
const { runAttempt } = await import('../../dist/pipeline/run-attempt.js');
// Traces when the bench sets OTEL_EXPORTER_OTLP_ENDPOINT (bench/tracing.ts), as every report-etl process does.
const { startTracing } = await import('../../dist/app/tracing-sdk.js');
const tracing = await startTracing(silentLogger);

const input = JSON.parse(process.argv[2]);
let firstRowAt = NaN;
let t0 = 0;
const logger = pino(
  { level: 'info' },
  {
    write(line) {
      if (process.env.BENCH_WORKER_LOG === '1') process.stderr.write(line);
      if (Number.isNaN(firstRowAt) && line.includes('"msg":"loading"')) firstRowAt = performance.now();
    },
  },
);
const config = configSchema.parse({
  connections: {
    sim: {
      baseUrl: input.simUrl,
      clientId: 'demo-client',
      clientSecret: 'demo-secret',
      timezone: 'Europe/Zurich',
      pollIntervalMs: 1,
      pollMaxIntervalMs: 20,
    },
  },
  jobs: {
    bench: {
      connection: 'sim',
      report: {
        mandant: 7777,
        name: input.report.replace(/\.avw$/, ''),
        outputType: input.outputType,
        paging: input.paging,
        parameters: { ROWS: String(input.rows), ...input.parameters },
      },
      target: {
        table: input.target,
        mode: input.mode,
        ...(input.archiveKeepDays ? { archive: { keepDays: input.archiveKeepDays } } : {}),
      },
    },
  },
});
const pool = makePool(silentLogger, input.databaseUrl, 2);
const redis = makeRedis(silentLogger, input.redisUrl);
const baseRssKiB = process.resourceUsage().maxRSS;
const peaks = { heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 };
const sampler = setInterval(() => {
  const m = process.memoryUsage();
  for (const k of ['heapTotal', 'heapUsed', 'external', 'arrayBuffers']) peaks[k] = Math.max(peaks[k], m[k]);
}, 50);
let cpu0 = process.cpuUsage();
const cpuMs = () => {
  const c = process.cpuUsage(cpu0);
  return (c.user + c.system) / 1000;
};
let result;
try {
  // Warm-up runs in this same process (input.warmups): the measured run then shows a warm worker's own cost.
  for (let i = 0; i < (input.warmups ?? 0); i++)
    await runAttempt({ job: resolveJob(config, 'bench'), pool, redis, logger });
  t0 = performance.now();
  cpu0 = process.cpuUsage();
  const r = await runAttempt({ job: resolveJob(config, 'bench'), pool, redis, logger });
  const durationMs = performance.now() - t0;
  result = {
    ok: true,
    attemptId: r.attemptId,
    plan: r.plan,
    rows: r.rows,
    pages: r.pages,
    bytes: r.bytes,
    durationMs,
    firstRowMs: firstRowAt - t0,
    maxRssKiB: process.resourceUsage().maxRSS,
    baseRssKiB,
    peaks,
    cpuMs: cpuMs(),
  };
} catch (err) {
  result = {
    ok: false,
    error: String(err?.message ?? err),
    rows: 0,
    pages: 0,
    bytes: 0,
    durationMs: performance.now() - t0,
    firstRowMs: NaN,
    maxRssKiB: process.resourceUsage().maxRSS,
    baseRssKiB,
    peaks,
    cpuMs: cpuMs(),
  };
}
clearInterval(sampler);
await tracing?.shutdown();
await pool.end();
redis.disconnect();
process.send(result, () => process.exit(0));
