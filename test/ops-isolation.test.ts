/**
 * Isolation: one bad job never stops the others. `validate` lists every problem and exits 2; `run`,
 * `enqueue` of a valid job work with one warning line per invalid job; asking for the invalid job fails with its
 * problems; the scheduler and workers run the valid jobs and show the invalid ones in the log, on the jobs overview
 * and in `report_etl_job_config_invalid{job}`. Retention prunes old history but keeps each job's last success and
 * last failure.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startService } from '../src/app/service.ts';
import { JANITOR_LEASE_CLASS } from '../src/queue/janitor.ts';
import { configSchema } from '../src/config/schema.ts';
import { uniqueName } from './support/env.ts';
import { startHarness, type Harness } from './support/harness.ts';
import { attemptsOf, captureLogger, deleteKeys, deleteRuns, janitorOf, waitFor } from './support/queue-env.ts';
import { runCli } from './support/cli-process.ts';

let h: Harness;
let configPath: string;
const jp = uniqueName('iso');
const prefix = uniqueName('isoq');

beforeAll(async () => {
  h = await startHarness();
  configPath = join(await mkdtemp(join(tmpdir(), 'report-etl-iso-')), 'jobs.yaml');
  await writeFile(
    configPath,
    `connections:
  sim: { baseUrl: "\${SIM_URL}", clientId: demo-client, clientSecret: "\${SIM_SECRET}", pollIntervalMs: 20 }
  broken: { baseUrl: "\${BROKEN_URL}", clientId: demo-client, clientSecret: "\${SIM_SECRET}" }
jobs:
  ${jp}_good:
    connection: sim
    schedule: "*/2 * * * * *"
    report: { mandant: 7777, name: Sales/Orders, parameters: { ROWS: "20" } }
    target: { table: ${h.schema}.good, mode: append }
  ${jp}_dash:
    connection: sim
    report: { mandant: 7777, name: Sales-Orders }
    target: { table: ${h.schema}.dash }
    schedule: "0 6 * * *"
  ${jp}_conn:
    connection: broken
    report: { mandant: 7777, name: Stock/Levels }
    target: { table: ${h.schema}.conn }
`,
  );
});
afterAll(async () => {
  await deleteRuns(h.pool, jp);
  await deleteKeys(h.redis, prefix);
  await h?.close();
});

const env = () => ({ SIM_URL: h.sim.url, SIM_SECRET: 'demo-secret', REPORT_ETL_QUEUE_PREFIX: prefix });

it(
  'validate lists every problem (exit 2); run of a valid job runs with one warning per invalid job; ' +
    'the invalid job fails with its own problems',
  async () => {
    const v = await runCli(['validate', '-c', configPath], env());
    expect(v.code).toBe(2);
    expect(v.stderr).toMatch(
      new RegExp(
        `jobs\\.yaml:12:\\d+: error: jobs\\.${jp}_dash\\.report\\.name: report name "Sales-Orders" has ` +
          `characters the server rejects`,
      ),
    );
    expect(v.stderr).toMatch(
      /jobs\.yaml:3:\d+: error: connections\.broken\.baseUrl: environment variable BROKEN_URL is not set/,
    );

    const ok = await runCli(['run', `${jp}_good`, '-c', configPath], env());
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain(`${jp}_good: succeeded, 20 rows`);
    const warnings = ok.stderr.split('\n').filter((l) => l.startsWith('warning: '));
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(
      new RegExp(
        `^warning: .*jobs\\.yaml:3:\\d+: connections\\.broken\\.baseUrl: .*\\(job "${jp}_conn" is skipped\\)$`,
      ),
    );
    expect(warnings[1]).toMatch(
      new RegExp(
        `^warning: .*jobs\\.yaml:12:\\d+: jobs\\.${jp}_dash\\.report\\.name: .*\\(job "${jp}_dash" is skipped\\)$`,
      ),
    );

    const bad = await runCli(['run', `${jp}_dash`, '-c', configPath], env());
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('report name "Sales-Orders" has characters the server rejects');
    expect(await attemptsOf(h.pool, `${jp}_dash`)).toEqual([]);

    const q = await runCli(['enqueue', `${jp}_good`, '-c', configPath], env());
    expect(q.code).toBe(0);
    expect(q.stdout).toContain(`${jp}_good: queued as`);
  },
  90_000,
);

it("one installation's janitor lease does not hold back another's", async () => {
  const config = configSchema.parse({
    connections: { sim: { baseUrl: h.sim.url, clientId: 'demo-client', clientSecret: 'x' } },
    jobs: {},
  });
  const [a, b] = [uniqueName('insta'), uniqueName('instb')];
  const holder = await h.pool.connect();
  const janitorA = janitorOf(h, config, { prefix: a });
  const janitorB = janitorOf(h, config, { prefix: b });
  try {
    // Another process of installation A is sweeping: it holds A's lease.
    await holder.query('SELECT pg_advisory_lock($1, hashtext($2))', [JANITOR_LEASE_CLASS, a]);
    expect((await janitorA.sweep()).leased).toBe(false);
    expect((await janitorB.sweep()).leased).toBe(true);
    await holder.query('SELECT pg_advisory_unlock($1, hashtext($2))', [JANITOR_LEASE_CLASS, a]);
    expect((await janitorA.sweep()).leased).toBe(true);
  } finally {
    holder.release();
    await Promise.all([janitorA.close(), janitorB.close()]);
  }
});

it(
  'scheduler + worker + admin run the valid job and show the invalid ones in the log, ' +
    'the overview and the metrics',
  async () => {
    const { logger, lines } = captureLogger();
    const before = (await attemptsOf(h.pool, `${jp}_good`)).length;
    process.env.SIM_URL = h.sim.url;
    process.env.SIM_SECRET = 'demo-secret';
    const service = await startService({
      configPath,
      logger,
      scheduler: true,
      worker: true,
      admin: true,
      adminPort: 0,
      prefix,
      janitorIntervalMs: 1_000,
    });
    try {
      await waitFor(
        'scheduled runs of the valid job',
        async () =>
          (await attemptsOf(h.pool, `${jp}_good`)).filter((r) => r.status === 'succeeded').length >= before + 2,
        60_000,
      );
      const invalid = lines.filter((l) => String(l.msg).startsWith('jobs.yaml: invalid job'));
      expect(invalid.map((l) => l.job).sort()).toEqual([`${jp}_conn`, `${jp}_dash`]);
      expect(invalid.find((l) => l.job === `${jp}_dash`)!.problems).toEqual([
        expect.stringMatching(/jobs\.yaml:12:\d+: .*Sales-Orders/),
      ]);
      const page = await (await fetch(`${service.adminUrl}/admin`)).text();
      expect(page).toContain(`data-job="${jp}_dash"`);
      expect(page).toMatch(new RegExp(`data-job="${jp}_dash">[\\s\\S]*?invalid config`));
      // Its schedule shows, and that the scheduler does not run it while it is invalid (not "manual only").
      expect(page).toMatch(new RegExp(`data-job="${jp}_dash">[\\s\\S]*?paused while invalid[\\s\\S]*?0 6 \\* \\* \\*`));
      expect(page).toMatch(new RegExp(`data-job="${jp}_good">[\\s\\S]*?healthy`));
      const metrics = await (await fetch(`${service.adminUrl}/metrics`)).text();
      expect(metrics).toContain(`report_etl_job_config_invalid{job="${jp}_dash"} 1`);
      expect(metrics).toContain(`report_etl_job_config_invalid{job="${jp}_conn"} 1`);
      expect(metrics).toMatch(new RegExp(`report_etl_job_last_success_timestamp_seconds\\{job="${jp}_good"\\} \\d+`));
    } finally {
      await service.stop();
    }
  },
  120_000,
);

it(
  "retention: the janitor prunes attempts older than history.keep in batches, keeping each job's last success and " +
    'last failure, and the runs they leave without attempts',
  async () => {
    const job = `${jp}_old`;
    const old = (days: number, status: string) => ({ id: randomUUID(), days, status });
    const rows = [
      old(10, 'succeeded'),
      old(9, 'failed'),
      old(8, 'succeeded'),
      old(7, 'failed'),
      old(6, 'interrupted'),
      old(5, 'succeeded'),
      old(4, 'failed'),
      old(0, 'failed'),
    ];
    const attempt = async (id: string, runKey: string, n: number, status: string, days: number) => {
      await h.pool.query(
        `INSERT INTO etl.attempts (attempt_id, job, run_key, trigger, attempt, status, target_table, write_mode,
         started_at)
       VALUES ($1, $2, $3, 'manual', $4, $5, 't', 'replace', now() - make_interval(days => $6))`,
        [id, job, runKey, n, status, days],
      );
      await h.pool.query(
        `INSERT INTO etl.run_errors (attempt_id, stage, error_kind, retryable, message) ` +
          `VALUES ($1, 'load', 'X', false, 'x')`,
        [id],
      );
    };
    const run = (runKey: string, attempts: number, status: string, days: number) =>
      h.pool.query(
        `INSERT INTO etl.runs (job, run_key, queue_job_id, trigger, created_at, attempts, status) VALUES ($1, $2, ` +
          `'q', 'manual', now() - make_interval(days => $3), $4, $5)`,
        [job, runKey, days, attempts, status],
      );
    for (const r of rows) {
      await run(r.id, 1, r.status, r.days);
      await attempt(r.id, r.id, 1, r.status, r.days);
    }
    // A run whose first attempt is old and whose second is not: it keeps its row, as it was.
    const multi = { key: `${job}_multi`, first: randomUUID(), second: randomUUID() };
    await run(multi.key, 2, 'failed', 9);
    await attempt(multi.first, multi.key, 1, 'failed', 9);
    await attempt(multi.second, multi.key, 2, 'failed', 1);
    // A run that never got an attempt (its worker died while it waited for a report slot).
    await run(`${job}_never`, 0, 'failed', 20);
    await h.pool.query(`UPDATE etl.runs SET status = NULL WHERE job = $1 AND run_key = $2`, [job, `${job}_never`]);
    const config = configSchema.parse({
      connections: { sim: { baseUrl: h.sim.url, clientId: 'demo-client', clientSecret: 'x' } },
      jobs: { [job]: { connection: 'sim', report: { mandant: 1, name: 'X' }, target: { table: 'x.y' } } },
      history: { keep: '3d' },
    });
    // The installation's own lease: no other installation's janitor (another test file's, a production one sharing
    // this PostgreSQL) holds it, so the first sweep has it.
    const janitor = janitorOf(h, config, { prefix: uniqueName('isoj') });
    try {
      const result = await janitor.sweep();
      expect(result.leased).toBe(true);
      expect(result.pruned).toEqual({ attempts: 7, runs: 7, more: false });
    } finally {
      await janitor.close();
    }
    const left = await attemptsOf(h.pool, job);
    // The newest success (5 days) and newest failure (today) stay, and so does everything newer than 3 days.
    expect(left.map((r) => r.attempt_id).sort()).toEqual([rows[5]!.id, rows[7]!.id, multi.second].sort());
    const { rows: errors } = await h.pool.query(
      'SELECT attempt_id FROM etl.run_errors WHERE attempt_id = ANY($1::uuid[])',
      [[...rows.map((r) => r.id), multi.first, multi.second]],
    );
    expect(errors).toHaveLength(3);
    const { rows: runs } = await h.pool.query<{ run_key: string; attempts: number }>(
      'SELECT run_key, attempts FROM etl.runs WHERE job = $1',
      [job],
    );
    expect(runs.map((r) => [r.run_key, r.attempts]).sort()).toEqual(
      [
        [rows[5]!.id, 1],
        [rows[7]!.id, 1],
        [multi.key, 2],
      ].sort(),
    );
  },
  90_000,
);
