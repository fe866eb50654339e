/**
 * `npm run bench -- fleet`: a fleet on one ERP (docs/architecture.md "A fleet"). N jobs on one tick (txt, R rows,
 * replace), W worker processes of concurrency C, with or without a connection limit (maxConcurrentReports). The
 * simulator runs in this process, so that it can count the report jobs open at each moment; the workers are real
 * `report-etl worker` processes with their own DATABASE_POOL_MAX.
 *
 * Reports: makespan (first enqueue to the last attempt's end), runs/s, the most report jobs open at once on the
 * server, the most PostgreSQL connections report-etl held at once (pg_stat_activity, application_name report-etl),
 * failed and duplicate runs, attempts left running; with a limit, the bound 1.5 × (N / limit) × one run's time on
 * the server (measured first: one run alone, from the start request to the DELETE).
 *
 * Options (argv `--name value` or env): --jobs/FLEET_JOBS (600), --workers/FLEET_WORKERS (4),
 * --concurrency/FLEET_CONCURRENCY (50), --limit/FLEET_LIMIT (none), --rows/FLEET_ROWS (10),
 * --job-ms/FLEET_JOB_MS (the simulator's report rendering time, 300), --pool-max/DATABASE_POOL_MAX (10),
 * --kill-after/FLEET_KILL_AFTER (seconds after the enqueue at which the first worker gets SIGKILL: the report then
 * says how long its report slots stayed taken, and whether every run still succeeded exactly once).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { makeRedis } from '../src/app/connections.ts';
import { loadConfig } from '../src/config/load.ts';
import { migrate } from '../src/history/migrate.ts';
import { silentLogger } from '../src/logger.ts';
import { makeQueue } from '../src/queue/queue.ts';
import { enqueueTick } from '../src/queue/scheduler.ts';
import { startSimulator } from '../src/simulator/index.ts';
import { deleteKeys } from './lib/redis-keys.ts';

function option(name: string, env: string, fallback: string | undefined): string | undefined {
  const k = process.argv.indexOf(`--${name}`);
  return k > 0 ? process.argv[k + 1] : (process.env[env] ?? fallback);
}
const N = Number(option('jobs', 'FLEET_JOBS', '600'));
const W = Number(option('workers', 'FLEET_WORKERS', '4'));
const C = Number(option('concurrency', 'FLEET_CONCURRENCY', '50'));
const limitOpt = option('limit', 'FLEET_LIMIT', undefined);
const LIMIT = limitOpt ? Number(limitOpt) : undefined;
const ROWS = Number(option('rows', 'FLEET_ROWS', '10'));
const JOB_MS = Number(option('job-ms', 'FLEET_JOB_MS', '300'));
const POOL_MAX = option('pool-max', 'DATABASE_POOL_MAX', '10')!;
const killOpt = option('kill-after', 'FLEET_KILL_AFTER', undefined);
const KILL_AFTER_S = killOpt ? Number(killOpt) : undefined;
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const BIN = fileURLToPath(new URL('../bin/report-etl.js', import.meta.url));
const log = (s: string): void => void process.stderr.write(`${s}\n`);

const id = randomUUID().slice(0, 8);
const schema = `fleet_${id}`;
const prefix = `fleet_${id}`;
const jobPrefix = `fleet_${id}_`;
const dir = await mkdtemp(join(tmpdir(), 'report-etl-fleet-'));
const sim = await startSimulator({ jobDurationMs: JOB_MS });
// Its own application_name, so that the connections counted are the workers' alone.
const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2, application_name: 'report-etl-fleet-bench' });
const redis = makeRedis(silentLogger, REDIS_URL);
const queue = makeQueue(redis, prefix);
const watcher = new pg.Client({ connectionString: DATABASE_URL, application_name: 'report-etl-fleet-bench' });
const workers: ChildProcess[] = [];

/** jobs.yaml with `n` jobs named `<jobPrefix><k>`. */
async function writeJobs(path: string, names: string[], limit: number | undefined): Promise<void> {
  const lines = [
    'connections:',
    '  erp:',
    `    baseUrl: ${sim.url}`,
    '    clientId: demo-client',
    '    clientSecret: ${FLEET_SECRET}',
    '    pollIntervalMs: 50',
  ];
  // Without a limit: as many as could ever be asked for, so that nothing waits.
  lines.push(`    maxConcurrentReports: ${limit ?? 1_000_000}`, 'jobs:');
  for (const n of names) {
    lines.push(
      `  ${n}:`,
      '    connection: erp',
      '    schedule: "0 6 * * *"',
      `    report: { mandant: 7777, name: Stock/Levels, outputType: txt, paging: 100, ` +
        `parameters: { ROWS: "${ROWS}" } }`,
      `    target: { table: ${schema}.${n}, mode: replace }`,
    );
  }
  await writeFile(path, `${lines.join('\n')}\n`);
}

/** Starts a worker process and resolves once it takes runs. */
function startWorker(config: string, k: number): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [
      BIN,
      'worker',
      '--config',
      config,
      '--queue-prefix',
      prefix,
      '--concurrency',
      String(C),
      '--log-format',
      'json',
      '--janitor-interval',
      KILL_AFTER_S === undefined ? '3600' : '5',
    ],
    {
      env: {
        ...process.env,
        DATABASE_URL,
        REDIS_URL,
        DATABASE_POOL_MAX: POOL_MAX,
        LOG_LEVEL: 'info',
        FLEET_SECRET: 'demo-secret',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  workers.push(child);
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      if (err.includes('worker ready: taking runs')) resolve(child);
      if (err.length > 1e6) err = err.slice(-1e5);
    });
    child.on('exit', (code) => reject(new Error(`worker ${k} exited with ${code}: ${err.slice(-2000)}`)));
  });
}

interface Counts {
  succeeded: number;
  failed: number;
  running: number;
  attempts: number;
  runs: number;
  lastEnd: Date | null;
}
async function counts(): Promise<Counts> {
  const { rows } = await pool.query<{
    succeeded: number;
    failed: number;
    running: number;
    attempts: number;
    runs: number;
    last_end: Date | null;
  }>(
    `SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
            count(*) FILTER (WHERE status IN ('failed', 'interrupted'))::int AS failed,
            count(*) FILTER (WHERE status = 'running')::int AS running, count(*)::int AS attempts,
            count(DISTINCT run_key)::int AS runs, max(finished_at) AS last_end
       FROM etl.attempts WHERE job LIKE $1`,
    [`${jobPrefix}%`],
  );
  const r = rows[0]!;
  return {
    succeeded: r.succeeded,
    failed: r.failed,
    running: r.running,
    attempts: r.attempts,
    runs: r.runs,
    lastEnd: r.last_end,
  };
}

try {
  await migrate(pool);
  await pool.query(`CREATE SCHEMA ${schema}`);
  await watcher.connect();
  const names = Array.from({ length: N }, (_, k) => `${jobPrefix}${k}`);
  const config = join(dir, 'jobs.yaml');
  await writeJobs(config, names, LIMIT);
  const { config: parsed } = await loadConfig(config, { ...process.env, FLEET_SECRET: 'demo-secret' });
  log(
    `fleet: ${N} jobs × ${ROWS} rows (txt, replace), ${W} workers × concurrency ${C}, ` +
      `DATABASE_POOL_MAX ${POOL_MAX}, limit ${LIMIT ?? 'none'}, report rendering ${JOB_MS} ms`,
  );
  await Promise.all(Array.from({ length: W }, (_, k) => startWorker(config, k)));

  // One run alone: its time on the server, from the start request to the DELETE.
  const t0 = performance.now();
  const soloTick = new Date('2026-01-01T05:00:00Z');
  await enqueueTick(queue, parsed, names[0]!, soloTick, 'schedule');
  while ((await counts()).succeeded < 1) await new Promise((r) => setTimeout(r, 10));
  const oneRunMs = performance.now() - t0;
  await pool.query('DELETE FROM etl.runs WHERE job LIKE $1', [`${jobPrefix}%`]);
  sim.resetCounters();

  let mostOpen = 0;
  let mostPg = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      mostOpen = Math.max(mostOpen, sim.counters().openJobs.length);
      const { rows } = await watcher.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'report-etl'`,
      );
      mostPg = Math.max(mostPg, rows[0]!.n);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const tick = new Date('2026-11-24T05:00:00Z');
  const started = new Date();
  await Promise.all(names.map((n) => enqueueTick(queue, parsed, n, tick, 'schedule')));
  let killed: { pid: number; heldAtKill: number; freedAfterS?: number } | undefined;
  const killing =
    KILL_AFTER_S === undefined
      ? undefined
      : (async () => {
          await new Promise((r) => setTimeout(r, KILL_AFTER_S * 1000));
          const victim = workers[0]!;
          // Its slots with a live lease (an expired one is only swept by the next acquire).
          const mine = async () =>
            (await redis.zrangebyscore(`${prefix}:slots:erp:held`, String(Date.now()), '+inf')).filter((h) =>
              h.includes(`:${victim.pid}:`),
            ).length;
          const heldAtKill = await mine();
          victim.kill('SIGKILL');
          const at = performance.now();
          killed = { pid: victim.pid!, heldAtKill };
          log(`  killed worker ${victim.pid} (SIGKILL) holding ${heldAtKill} report slots`);
          while ((await mine()) > 0) await new Promise((r) => setTimeout(r, 100));
          killed.freedAfterS = +((performance.now() - at) / 1000).toFixed(1);
          log(`  its slots were free again ${killed.freedAfterS} s after the kill`);
        })();
  const deadline = Date.now() + 30 * 60_000;
  let c = await counts();
  for (let last = -1; c.succeeded + c.failed < N && Date.now() < deadline; c = await counts()) {
    if (c.succeeded !== last && c.succeeded % 100 < 10) log(`  ${c.succeeded} of ${N} succeeded`);
    last = c.succeeded;
    await new Promise((r) => setTimeout(r, 200));
  }
  // Retried failures may still be going: wait for the queue to settle.
  while (Date.now() < deadline) {
    const q = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    if (Object.values(q).every((n) => n === 0)) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  sampling = false;
  await sampler;
  await killing;
  c = await counts();
  const makespanS = ((c.lastEnd ?? new Date()).getTime() - started.getTime()) / 1000;
  const { rows: dup } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (SELECT run_key FROM etl.attempts WHERE job LIKE $1 AND status = ` +
      `'succeeded' GROUP BY run_key HAVING count(*) > 1) d`,
    [`${jobPrefix}%`],
  );
  const result = {
    jobs: N,
    workers: W,
    concurrency: C,
    poolMax: Number(POOL_MAX),
    limit: LIMIT ?? null,
    rows: ROWS,
    reportRenderingMs: JOB_MS,
    oneRunMs: Math.round(oneRunMs),
    makespanS: +makespanS.toFixed(2),
    runsPerSec: +(c.succeeded / makespanS).toFixed(1),
    succeeded: c.succeeded,
    failedAttempts: c.failed,
    leftRunning: c.running,
    runsWithoutSuccess: N - c.succeeded + dup[0]!.n,
    duplicateRuns: dup[0]!.n,
    mostReportJobsOpen: mostOpen,
    mostPgConnections: mostPg,
    boundS: LIMIT ? +((1.5 * (N / LIMIT) * oneRunMs) / 1000).toFixed(1) : null,
    killed: killed ?? null,
  };
  log(JSON.stringify(result, null, 2));
  log(
    `fleet: ${c.succeeded}/${N} succeeded in ${makespanS.toFixed(1)} s (${result.runsPerSec} runs/s), ` +
      `${c.failed} failed attempts, ${dup[0]!.n} duplicates, ` +
      `${c.running} left running; most report jobs open ${mostOpen}${LIMIT ? ` (limit ${LIMIT})` : ''}, ` +
      `most PostgreSQL connections ${mostPg}` +
      (result.boundS ? `; bound 1.5 × (N/limit) × one run (${result.oneRunMs} ms) = ${result.boundS} s` : ''),
  );
} finally {
  for (const w of workers) w.kill('SIGTERM');
  await Promise.all(workers.map((w) => new Promise((r) => (w.exitCode !== null ? r(undefined) : w.once('exit', r)))));
  await queue.obliterate({ force: true }).catch(() => undefined);
  await queue.close();
  await deleteKeys(redis, prefix);
  redis.disconnect();
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
  // Their attempts go with them.
  await pool.query('DELETE FROM etl.runs WHERE job LIKE $1', [`${jobPrefix}%`]).catch(() => undefined);
  await pool.end();
  await watcher.end().catch(() => undefined);
  await sim.close();
  await rm(dir, { recursive: true, force: true });
}
