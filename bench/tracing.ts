/**
 * `npm run bench -- tracing`: what traces cost (docs/performance.md "Traces"; docs/observability.md "Tracing"). The
 * same warm-worker runs as the user's path (bench/lib/worker.js, the compiled product, 1 ms polls, pages pre-rendered
 * by the page server) with traces off (no OTEL_ variable: the OpenTelemetry API's no-op tracer; the timeline is
 * recorded all the same) and on (OTEL_EXPORTER_OTLP_ENDPOINT set: the SDK, a batch processor and the OTLP/HTTP
 * exporter, in http/json and http/protobuf, to a receiver in this process that answers 200 at once), interleaved repeat
 * by repeat so that the shared machine's load falls on each alike:
 * - 10 rows, json, 1 page (two unmeasured runs first): report-etl's own fixed cost per run;
 * - 100k txt rows in 1 page, and in 1,000 pages of 100 rows (one unmeasured run first): per-row and per-page costs.
 * Prints medians and ranges, and the spans the receiver got per traced run; writes them to
 * bench/results/<date>-tracing.json.
 *
 * Options (argv `--name value` or env BENCH_*): --repeats (9 for 10 rows, a third of it, at least 3, for 100k);
 * --baseline DIR: also the same runs by another checkout's build (DIR/bench/lib/worker.js and DIR/dist, built), e.g.
 * the commit before traces, interleaved with the others, to compare builds under the same load.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { machine } from './lib/options.ts';
import { makePool } from '../src/app/connections.ts';
import { migrate } from '../src/history/migrate.ts';
import { silentLogger } from '../src/logger.ts';
import { measureWorker, startPageServer } from './lib/children.ts';
import { median } from './lib/report.ts';
import type { WorkerInput } from './lib/worker-types.ts';

function option(name: string, fallback: string): number {
  const k = process.argv.indexOf(`--${name}`);
  const raw = k > 0 ? process.argv[k + 1] : (process.env[`BENCH_${name.toUpperCase()}`] ?? fallback);
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: expected a whole number of at least 1, got '${raw}'`);
  return n;
}
const REPEATS = option('repeats', '9');
const baselineAt = process.argv.indexOf('--baseline');
const BASELINE =
  baselineAt > 0
    ? join(process.argv[baselineAt + 1]!, 'bench', 'lib', 'worker.js')
    : process.env.BENCH_BASELINE
      ? join(process.env.BENCH_BASELINE, 'bench', 'lib', 'worker.js')
      : undefined;
const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
/** The commit of the baseline checkout (what the results file records of it). */
function baselineCommit(): string {
  try {
    return execFileSync('git', ['-C', join(BASELINE!, '..', '..', '..'), 'rev-parse', 'HEAD'], {
      encoding: 'utf8',
    }).trim();
  } catch {
    return 'unknown';
  }
}
const load = (): string =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

// The OTLP receiver: counts the spans of JSON requests and the requests of protobuf ones.
let jsonSpans = 0;
let protobufRequests = 0;
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    if (String(req.headers['content-type']).includes('json')) {
      jsonSpans += (
        Buffer.concat(chunks)
          .toString()
          .match(/"spanId"/g) ?? []
      ).length;
    } else protobufRequests += 1;
    res.writeHead(200).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

type Variant = 'baseline' | 'off' | 'http/json' | 'http/protobuf';
const VARIANTS: Variant[] = [...(BASELINE ? ['baseline' as const] : []), 'off', 'http/json', 'http/protobuf'];

/** One measured run in a fresh warm worker, traced as `variant` says. */
async function measure(variant: Variant, input: WorkerInput): Promise<{ ms: number; cpuMs: number }> {
  const saved = {
    endpoint: process.env.OTEL_EXPORTER_OTLP_ENDPOINT,
    protocol: process.env.OTEL_EXPORTER_OTLP_PROTOCOL,
  };
  if (variant === 'off' || variant === 'baseline') {
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  } else {
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint;
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = variant;
  }
  try {
    const r = variant === 'baseline' ? await measureWorker(input, [], BASELINE) : await measureWorker(input);
    if (!r.ok) throw new Error(`${variant} run failed: ${r.error}`);
    return { ms: r.durationMs, cpuMs: r.cpuMs };
  } finally {
    for (const [k, v] of [
      ['OTEL_EXPORTER_OTLP_ENDPOINT', saved.endpoint],
      ['OTEL_EXPORTER_OTLP_PROTOCOL', saved.protocol],
    ] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

const pool = makePool(silentLogger, databaseUrl, 2);
await migrate(pool);
const schema = `bench_${randomUUID().slice(0, 8)}`;
await pool.query(`CREATE SCHEMA ${schema}`);
const server = await startPageServer();
const loadBefore = load();
const results: Record<string, unknown>[] = [];
try {
  const cases: {
    label: string;
    rows: number;
    outputType: 'json' | 'txt';
    paging: number;
    warmups: number;
    repeats: number;
    rowsPerSec: boolean;
  }[] = [
    {
      label: '10 rows, json, 1 page',
      rows: 10,
      outputType: 'json',
      paging: 10,
      warmups: 2,
      repeats: REPEATS,
      rowsPerSec: false,
    },
    {
      label: '100k txt rows, 1 page',
      rows: 100_000,
      outputType: 'txt',
      paging: 100_000,
      warmups: 1,
      repeats: Math.max(3, Math.round(REPEATS / 3)),
      rowsPerSec: true,
    },
    {
      label: '100k txt rows, 1,000 pages',
      rows: 100_000,
      outputType: 'txt',
      paging: 100,
      warmups: 1,
      repeats: Math.max(3, Math.round(REPEATS / 3)),
      rowsPerSec: true,
    },
  ];
  for (const c of cases) {
    if (c.rows > 10)
      await server.prerender({
        report: 'Big.avw',
        parameters: { ROWS: String(c.rows) },
        outputType: c.outputType,
        paging: c.paging,
      });
    const input: WorkerInput = {
      simUrl: server.url,
      databaseUrl,
      redisUrl,
      report: 'Big.avw',
      rows: c.rows,
      outputType: c.outputType,
      paging: c.paging,
      target: `${schema}.t_${c.paging}_${c.rows}`,
      mode: 'replace',
      warmups: c.warmups,
    };
    const got = new Map<Variant, { ms: number; cpuMs: number }[]>(VARIANTS.map((v) => [v, []]));
    const spansBefore = jsonSpans;
    for (let i = 0; i < c.repeats; i++) {
      // Interleaved, in a rotating order: the machine's load falls on every variant alike.
      for (let k = 0; k < VARIANTS.length; k++) {
        const v = VARIANTS[(i + k) % VARIANTS.length]!;
        got.get(v)!.push(await measure(v, input));
      }
    }
    const spansPerRun = (jsonSpans - spansBefore) / (c.repeats * (1 + c.warmups));
    results.push({
      case: c.label,
      repeats: c.repeats,
      spansPerTracedRun: Math.round(spansPerRun),
      variants: Object.fromEntries(
        VARIANTS.map((v) => [
          v,
          {
            medianMs: median(got.get(v)!.map((r) => r.ms)),
            medianCpuMs: median(got.get(v)!.map((r) => r.cpuMs)),
            ms: got.get(v)!.map((r) => r.ms),
            cpuMs: got.get(v)!.map((r) => r.cpuMs),
          },
        ]),
      ),
    });
    process.stdout.write(`${c.label} (medians of ${c.repeats}; ${spansPerRun.toFixed(0)} spans per traced run)\n`);
    for (const v of VARIANTS) {
      const ms = got.get(v)!.map((r) => r.ms);
      const cpu = median(got.get(v)!.map((r) => r.cpuMs));
      const figure = c.rowsPerSec
        ? `${Math.round((c.rows / median(ms)) * 1000)} rows/s ` +
          `(${ms.map((x) => Math.round((c.rows / x) * 1000)).join(', ')})`
        : `${median(ms).toFixed(1)} ms (${Math.min(...ms).toFixed(1)}-${Math.max(...ms).toFixed(1)})`;
      process.stdout.write(`  traces ${v.padEnd(13)} ${figure}, CPU ${cpu.toFixed(1)} ms\n`);
    }
  }
  process.stdout.write(
    `load average ${loadBefore} before, ${load()} after; protobuf requests received ${protobufRequests}\n`,
  );
  const file = join(
    import.meta.dirname,
    'results',
    `${new Date().toISOString().slice(0, 16).replace(':', '-')}-tracing.json`,
  );
  await mkdir(join(import.meta.dirname, 'results'), { recursive: true });
  await writeFile(
    file,
    JSON.stringify(
      {
        date: new Date().toISOString(),
        machine: machine(),
        loadAverage: { before: loadBefore, after: load() },
        baseline: BASELINE ? baselineCommit() : null,
        results,
      },
      null,
      2,
    ) + '\n',
  );
  process.stdout.write(`results: ${file}\n`);
} finally {
  await server.close();
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pool.end();
  receiver.close();
}
