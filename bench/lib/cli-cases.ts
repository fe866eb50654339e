/**
 * The user's-path cases of `npm run bench`, measured on the README's command `npx report-etl run <job>`:
 * the bin (bin/report-etl.js, which runs the build, dist/main.js) started as npx starts it, with the shebang's node
 * flags, against the page server (bench/user-path.ts: against `report-etl simulate`):
 * - {@link fixedCost}: a 10-row run as a whole process, wall time from spawn to exit (the recommended first status
 *   poll, 250 ms, included: the connection keeps the default pollIntervalMs), median and spread of `repeats` after one
 *   warm-up start (which fills the compile cache, as any first run on a machine does);
 * - {@link cliPeakRss}: the process's peak RSS and wall time during a run of `rows` (or 100,000) rows (txt, paging
 *   100,000).
 * Peak RSS is read inside the process (process.resourceUsage().maxRSS at exit, by a module given to --import).
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from '../../src/runtime-flags.ts';
import { median } from './report.ts';

const BIN = fileURLToPath(new URL('../../bin/report-etl.js', import.meta.url));
/** Written to stderr at exit by the --import module: `BENCH_MAXRSS_KIB <n>`. */
const RSS_HOOK =
  `data:text/javascript,process.on('exit',()=>process.stderr.write('BENCH_MAXRSS_KIB ` +
  `'+process.resourceUsage().maxRSS+'\\n'))`;

/** One whole-process run of the CLI. */
export interface CliRun {
  ms: number;
  maxRssMB: number;
  code: number | null;
  stdout: string;
  stderr: string;
}

/** What the CLI cases need. */
export interface CliContext {
  simUrl: string;
  databaseUrl: string;
  redisUrl: string;
  /** schema for the targets */
  schema: string;
  /** a scratch directory for jobs.yaml */
  dir: string;
}

/**
 * Writes the bench's jobs.yaml (jobs `small`: 10 rows json, `mid`: 100,000 rows txt, and `big`: `rows` rows txt,
 * paging 100,000); returns its path.
 */
export async function writeJobs(c: CliContext, rows: number): Promise<string> {
  const file = join(c.dir, 'jobs.yaml');
  await writeFile(
    file,
    `connections:
  sim:
    baseUrl: ${c.simUrl}
    clientId: demo-client
    clientSecret: \${BENCH_CLIENT_SECRET:-demo-secret}
    timezone: Europe/Zurich
jobs:
  small:
    connection: sim
    report: { mandant: 7777, name: Big, outputType: json, paging: 10, parameters: { ROWS: "10" } }
    target: { table: ${c.schema}.cli_small, mode: replace }
  mid:
    connection: sim
    report: { mandant: 7777, name: Big, outputType: txt, paging: 100000, parameters: { ROWS: "100000" } }
    target: { table: ${c.schema}.cli_mid, mode: replace }
  big:
    connection: sim
    report: { mandant: 7777, name: Big, outputType: txt, paging: 100000, parameters: { ROWS: "${rows}" } }
    target: { table: ${c.schema}.cli_big, mode: replace }
`,
  );
  return file;
}

/** Runs `report-etl run <job> --config <file>` as npx does (the shebang's flags), to its exit. */
export function runCli(c: CliContext, config: string, job: string): Promise<CliRun> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [...NODE_FLAGS, '--import', RSS_HOOK, BIN, 'run', job, '--config', config, '--log-format', 'json'],
      {
        env: { ...process.env, DATABASE_URL: c.databaseUrl, REDIS_URL: c.redisUrl, LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = performance.now() - started;
      const kib = Number(/BENCH_MAXRSS_KIB (\d+)/.exec(stderr)?.[1] ?? NaN);
      resolve({ ms, maxRssMB: (kib * 1024) / 1e6, code, stdout, stderr: stderr.replace(/BENCH_MAXRSS_KIB \d+\n/, '') });
    });
  });
}

async function checked(c: CliContext, config: string, job: string): Promise<CliRun> {
  const r = await runCli(c, config, job);
  if (r.code !== 0) throw new Error(`report-etl run ${job} exited ${r.code}: ${r.stderr.slice(-2000)}`);
  return r;
}

/** The whole-process cost of a 10-row run: median, min and max wall ms of `repeats` runs after one warm-up. */
export async function fixedCost(
  c: CliContext,
  config: string,
  repeats: number,
): Promise<{ medianMs: number; minMs: number; maxMs: number; rssMB: number }> {
  await checked(c, config, 'small');
  const runs: CliRun[] = [];
  for (let i = 0; i < repeats; i++) runs.push(await checked(c, config, 'small'));
  const ms = runs.map((r) => r.ms);
  return {
    medianMs: median(ms),
    minMs: Math.min(...ms),
    maxMs: Math.max(...ms),
    rssMB: median(runs.map((r) => r.maxRssMB)),
  };
}

/** Peak RSS (MB) and wall ms of `repeats` runs of job `job` (default `big`; the page server must hold its pages). */
export async function cliPeakRss(
  c: CliContext,
  config: string,
  repeats: number,
  job = 'big',
): Promise<{ rssMB: number[]; ms: number[] }> {
  const runs: CliRun[] = [];
  for (let i = 0; i < repeats; i++) runs.push(await checked(c, config, job));
  return { rssMB: runs.map((r) => r.maxRssMB), ms: runs.map((r) => r.ms) };
}
