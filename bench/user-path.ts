/**
 * `npm run bench -- user-path`: the README's path alone, on the README's server, in a few seconds. The simulator runs
 * as `npx report-etl simulate` does (the bin, in its own process), then:
 * - a 10-row `report-etl run` as a whole process, spawn to exit, the recommended 250 ms first status poll included
 *   (bench/lib/cli-cases.ts fixedCost: one unmeasured start that fills the compile cache, then `repeats`);
 * - the same 10 rows inside a warm worker (bench/lib/worker.js: two unmeasured runs first in the same process, 1 ms
 *   polls, so the time is report-etl's own plus the local servers' answers), `repeats` fresh workers.
 * Prints medians, ranges and the load average before and after: the machine is shared, so compare runs taken at a
 * similar load. Goals (docs/performance.md "The user's path"): ≤ 0.6 s whole process, ≤ 20 ms in a warm worker.
 *
 * Options (argv `--name value` or env): --repeats/BENCH_REPEATS (9), --job-duration/BENCH_JOB_DURATION (how long the
 * simulator keeps a report job Running, ms; 0 as in `npm run bench`, where the rest of the bench's figures come from;
 * `report-etl simulate` alone says 300, a server's rendering time that is not report-etl's).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { makePool } from '../src/app/connections.ts';
import { migrate } from '../src/history/migrate.ts';
import { silentLogger } from '../src/logger.ts';
import { LONG_RUNNING_FLAGS, NODE_FLAGS } from '../src/runtime-flags.ts';
import { fixedCost, writeJobs } from './lib/cli-cases.ts';
import { measureWorker } from './lib/children.ts';
import { median } from './lib/report.ts';

function option(name: string, fallback: string): number {
  const k = process.argv.indexOf(`--${name}`);
  const raw =
    k > 0 ? process.argv[k + 1] : (process.env[`BENCH_${name.toUpperCase().replaceAll('-', '_')}`] ?? fallback);
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name}: expected a whole number, got '${raw}'`);
  return n;
}
const REPEATS = Math.max(1, option('repeats', '9'));
const JOB_DURATION_MS = option('job-duration', '0');
const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const BIN = fileURLToPath(new URL('../bin/report-etl.js', import.meta.url));
const load = (): string =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
const range = (xs: number[], digits: number): string =>
  `median ${median(xs).toFixed(digits)} ms ` +
  `(${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)} of ${xs.length})`;

const pool = makePool(silentLogger, databaseUrl, 2);
await migrate(pool);
const schema = `bench_${randomUUID().slice(0, 8)}`;
await pool.query(`CREATE SCHEMA ${schema}`);
const dir = await mkdtemp(join(tmpdir(), 'report-etl-user-path-'));
const sim = spawn(
  process.execPath,
  [...NODE_FLAGS, BIN, 'simulate', '--port', '0', '--job-duration', String(JOB_DURATION_MS)],
  {
    env: { ...process.env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
try {
  let out = '';
  const simUrl = await new Promise<string>((resolve, reject) => {
    sim.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      if (url) resolve(url);
    });
    sim.once('exit', (code) => reject(new Error(`report-etl simulate exited (code ${code}) before listening: ${out}`)));
  });
  const loadBefore = load();
  const ctx = { simUrl, databaseUrl, redisUrl, schema, dir };
  const cost = await fixedCost(ctx, await writeJobs(ctx, 10), REPEATS);
  const warm: number[] = [];
  const warmCpu: number[] = [];
  for (let i = 0; i < REPEATS; i++) {
    const r = await measureWorker(
      {
        simUrl,
        databaseUrl,
        redisUrl,
        report: 'Big.avw',
        rows: 10,
        outputType: 'json',
        paging: 10,
        target: `${schema}.warm_small`,
        mode: 'replace',
        warmups: 2,
      },
      [...NODE_FLAGS, ...LONG_RUNNING_FLAGS],
    );
    if (!r.ok) throw new Error(`warm 10-row run failed: ${r.error}`);
    warm.push(r.durationMs);
    warmCpu.push(r.cpuMs);
  }
  process.stdout.write(
    `report-etl simulate --job-duration ${JOB_DURATION_MS}; load average ${loadBefore} before, ${load()} after\n` +
      `10-row report-etl run, whole process: median ${(cost.medianMs / 1000).toFixed(3)} s ` +
      `(${(cost.minMs / 1000).toFixed(3)}-${(cost.maxMs / 1000).toFixed(3)} of ${REPEATS}), RSS ` +
      `${cost.rssMB.toFixed(0)} MB (goal <= 0.6 s)\n` +
      `10-row run in a warm worker: ${range(warm, 1)}, CPU ${median(warmCpu).toFixed(1)} ms (goal <= 20 ms)\n`,
  );
} finally {
  const exited = sim.exitCode === null ? once(sim, 'exit') : undefined;
  sim.kill('SIGTERM');
  await exited;
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pool.end();
  await rm(dir, { recursive: true, force: true });
}
