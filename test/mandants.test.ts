/**
 * Many mandants (docs/loaded-tables.md "Many mandants"), against the simulator over HTTP, a real PostgreSQL and Redis:
 * a job with 20 mandants loads each mandant's rows into one table, one run each, within the connection's report cap;
 * one mandant's failure leaves the others loaded and its own rows as they were; a replay of one mandant touches no
 * other; replace, merge and replaceRange act per mandant; `run --mandant` runs the mandants asked for.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { staticConfig } from '../src/config/live-config.ts';
import { chooseSubjects, subjectName } from '../src/config/mandants.ts';
import { configSchema, type EtlConfig } from '../src/config/schema.ts';
import { jobTargetProblems } from '../src/config/target-checks.ts';
import { silentLogger } from '../src/logger.ts';
import { tickQueueJobId } from '../src/queue/names.ts';
import { makeAdminMetrics } from '../src/admin/metrics.ts';
import { replayRun } from '../src/queue/replay.ts';
import { enqueueTick, makeScheduler, type SchedulerDeps } from '../src/queue/scheduler.ts';
import type { RunWorker } from '../src/queue/worker.ts';
import { readAttemptRequest, requestLines } from '../src/history/attempt-request.ts';
import { jobHealth } from '../src/history/job-health.ts';
import { failedRunsToReplay } from '../src/history/run-list.ts';
import { reportData } from '../src/simulator/catalogue.ts';
import { revertAppendedRun } from '../src/warehouse/revert.ts';
import { runCli, simConnectionLines } from './support/cli.ts';
import { uniqueName } from './support/env.ts';
import { attemptFailure, jobEntry } from './support/harness.ts';
import { attemptsOf, useQueueBench, waitFor, workerOf } from './support/queue-env.ts';

const BOOKINGS = 'Finance/Bookings.avw';
const PERIOD = { FROM: '2026-01-01', TO: '2026-01-08' };
const MANDANTS = Array.from({ length: 20 }, (_, i) => 7001 + i);

const prefix = uniqueName('mq');
const jp = uniqueName('mj');
const { h, queue } = useQueueBench(prefix, jp, { jobDurationMs: 200 });
const workers: RunWorker[] = [];

afterAll(async () => {
  await Promise.all(workers.map((w) => w.close(0)));
});

/** The server's bookings of `mandant` in `period` at `revision`, as sorted `mandant|nr|day|betrag` lines. */
function served(mandant: number, revision: number, period: Record<string, string> = PERIOD): string[] {
  const data = reportData(BOOKINGS, period, 1, { mandant: String(mandant), revision })!;
  return Array.from({ length: data.rowCount }, (_, i) => {
    const [nr, day, betrag] = data.row(i);
    return `${mandant}|${nr}|${day}|${Number(betrag)}`;
  }).sort();
}

/** The table's rows of `mandant` (all when undefined) as sorted `mandant|nr|day|betrag` lines. */
async function loaded(table: string, mandant?: number, column = 'mandant'): Promise<string[]> {
  const { rows } = await h.pool.query<{ r: string }>(
    `SELECT concat_ws('|', ${column}, buchung_nr, buchungstag::text, betrag::numeric::text) AS r FROM ${table}
      WHERE $1::int IS NULL OR ${column} = $1`,
    [mandant ?? null],
  );
  return rows.map((r) => r.r.replace(/\|([0-9.]+)$/, (_, n: string) => `|${Number(n)}`)).sort();
}

/** A config with one bookings job over `mandants` (and the given target options, parameters and connection). */
function bookingsConfig(
  job: string,
  table: string,
  mandants: number[],
  o: {
    target?: Record<string, unknown>;
    parameters?: Record<string, string>;
    connection?: Record<string, unknown>;
  } = {},
): EtlConfig {
  return h.config(
    {
      [job]: {
        ...jobEntry(
          { name: 'Finance/Bookings', mandant: mandants, parameters: { ...PERIOD, ...o.parameters } },
          { table, mode: 'replace', columns: { buchungstag: 'date' }, ...o.target },
        ),
        schedule: '0 3 * * *',
        timezone: 'UTC',
        retry: { attempts: 1, backoffMs: 0 },
      },
    },
    o.connection,
  );
}

function startWorker(config: () => EtlConfig, concurrency: number): RunWorker {
  const w = workerOf(h, config, { prefix, concurrency, overlapRetryMs: 100 });
  workers.push(w);
  return w;
}

/** A stand-in for node-cron's createTask whose ticks the test fires (as `execution:missed`, a second late). */
function recordingTasks() {
  const missed = new Map<string, (ctx: { date: Date }) => unknown>();
  const createTask = ((_expr: string, _fn: unknown, options?: { name?: string }) => ({
    on(event: string, fn: (ctx: { date: Date }) => unknown) {
      if (event === 'execution:missed') missed.set(options?.name ?? '', fn);
    },
    start: () => undefined,
    destroy: async () => undefined,
  })) as unknown as SchedulerDeps['createTask'];
  return { createTask, fire: (job: string, date: Date) => missed.get(`report-etl:${job}`)!({ date }) };
}

it('config: a mandant listed twice, mandantColumn on a single mandant and a clashing column are config errors', () => {
  const parse = (report: Record<string, unknown>, target: Record<string, unknown>) =>
    configSchema.safeParse({
      connections: { sim: { baseUrl: 'http://x', clientId: 'c', clientSecret: 's' } },
      jobs: { j: { connection: 'sim', report: { name: 'R', ...report }, target: { table: 't', ...target } } },
    });
  const messages = (r: ReturnType<typeof parse>) => (r.success ? [] : r.error.issues.map((i) => i.message));
  expect(messages(parse({ mandant: [7777, 8888, 7777] }, {}))).toEqual([
    'mandant 7777 is listed twice: each mandant is one run per tick, list it once',
  ]);
  expect(messages(parse({ mandant: 7777 }, { mandantColumn: 'mandant_nr' }))[0]).toMatch(
    /^mandantColumn names the column of a job with a list of mandants \(report\.mandant is 7777\)/,
  );
  expect(messages(parse({ mandant: [1, 2] }, { mode: 'merge', key: ['mandant'] }))).toEqual([
    "this merge key column is mandant, the column that holds each row's mandant: set target.mandantColumn to " +
      'another name, e.g. mandant_nr',
  ]);
  expect(messages(parse({ mandant: [1, 2] }, { mandantColumn: '_etl_run_key' }))[0]).toMatch(
    /may not start with _etl_/,
  );
  expect(messages(parse({ mandant: [] }, {}))[0]).toMatch(/at least one/);
  expect(messages(parse({ mandant: [7777, 2147483648] }, {}))).toEqual([
    "a mandant of a list is at most 2147483647: the target keeps each row's mandant in an integer column " +
      '(docs/loaded-tables.md "Many mandants")',
  ]);
  expect(parse({ mandant: [2147483647] }, {}).success).toBe(true);
  expect(parse({ mandant: [1, 2] }, { mandantColumn: 'firma' }).success).toBe(true);
  const ok = parse({ mandant: [1, 2] }, {});
  expect(ok.success && chooseSubjects('j', ok.data.jobs.j!, undefined).map((s) => s.name)).toEqual(['j[1]', 'j[2]']);
  expect(() => ok.success && chooseSubjects('j', ok.data.jobs.j!, ['3'])).toThrow(
    '--mandant 3: not a mandant of job "j" (its mandants: 1, 2)',
  );
});

it('20 mandants on one tick: 20 runs, each mandant loaded into one table, the report cap held', async () => {
  const job = `${jp}_twenty`;
  const table = `${h.schema}.bookings_twenty`;
  const config = bookingsConfig(job, table, MANDANTS, { connection: { maxConcurrentReports: 4 } });
  const tasks = recordingTasks();
  const scheduler = makeScheduler({
    config: staticConfig(config),
    queue,
    pool: h.pool,
    logger: silentLogger,
    createTask: tasks.createTask,
  });
  await scheduler.start();
  h.sim.resetCounters();
  const tick = new Date(Math.floor(Date.now() / 1000) * 1000 - 2000);
  try {
    await tasks.fire(job, tick);
  } finally {
    await scheduler.close();
  }
  startWorker(() => config, 20);
  const subjects = MANDANTS.map((m) => subjectName(job, m));
  await waitFor('20 runs succeeded', async () => {
    const done = await Promise.all(subjects.map(async (s) => (await attemptsOf(h.pool, s))[0]?.status));
    return done.every((status) => status === 'succeeded');
  });
  for (const s of subjects) {
    const [a] = await attemptsOf(h.pool, s);
    expect(a).toMatchObject({ status: 'succeeded', run_key: tickQueueJobId(s, tick), trigger: 'schedule' });
  }
  expect(tickQueueJobId(subjects[0]!, tick)).toMatch(new RegExp(`^${jp}_twenty\\[7001\\]__\\d{8}T\\d{6}Z$`));
  expect(await loaded(table)).toEqual(MANDANTS.flatMap((m) => served(m, 0)).sort());
  const { rows } = await h.pool.query<{ n: number }>(`SELECT count(DISTINCT mandant)::int AS n FROM ${table}`);
  expect(rows[0]!.n).toBe(20);
  const c = h.sim.counters();
  expect(c.jobsCreated).toBe(20);
  expect(c.peakOpenJobs).toBeLessThanOrEqual(4);
  expect(c.peakOpenJobs).toBeGreaterThan(1);
  await Promise.all(workers.splice(0).map((w) => w.close(0)));
});

it("one mandant's failure leaves the other 19 loaded, its own rows untouched; its replay no other's", async () => {
  const job = `${jp}_fail`;
  const table = `${h.schema}.bookings_fail`;
  const subjects = MANDANTS.map((m) => subjectName(job, m));
  h.sim.setRevision(0);
  const before = bookingsConfig(job, table, MANDANTS);
  for (const s of subjects) expect((await h.run(before, s)).status).toBe('succeeded');
  // Revision 1 corrects, adds and deletes bookings; mandant 7005 is locked on the server for this tick.
  h.sim.setRevision(1);
  const failing = bookingsConfig(job, table, MANDANTS, { parameters: { SIM_FAIL_MANDANT: '7005' } });
  const tick = new Date('2026-01-08T03:00:00Z');
  for (const s of subjects) await enqueueTick(queue, failing, s, tick, 'schedule');
  startWorker(() => failing, 20);
  await waitFor('20 runs ended', async () => {
    const ended = await Promise.all(
      subjects.map(async (s) => (await attemptsOf(h.pool, s)).filter((a) => a.status !== 'running').length),
    );
    return ended.every((n) => n === 2);
  });
  const failedOne = subjectName(job, 7005);
  for (const s of subjects) {
    const newest = (await attemptsOf(h.pool, s)).at(-1)!;
    expect(newest.status, s).toBe(s === failedOne ? 'failed' : 'succeeded');
  }
  expect(served(7005, 0)).not.toEqual(served(7005, 1));
  for (const m of MANDANTS) expect(await loaded(table, m), String(m)).toEqual(served(m, m === 7005 ? 0 : 1));
  // Its replay, at revision 2 and with the mandant no longer locked, loads it alone.
  await Promise.all(workers.splice(0).map((w) => w.close(0)));
  h.sim.setRevision(2);
  const fixed = bookingsConfig(job, table, MANDANTS);
  const { jobId } = await replayRun(
    { pool: h.pool, queue, config: fixed },
    { job: failedOne, runKey: tickQueueJobId(failedOne, tick) },
  );
  expect(jobId).toContain(`${failedOne}__`);
  startWorker(() => fixed, 2);
  await waitFor(
    'the replay succeeded',
    async () => (await attemptsOf(h.pool, failedOne)).at(-1)?.status === 'succeeded',
  );
  for (const m of MANDANTS) expect(await loaded(table, m), String(m)).toEqual(served(m, m === 7005 ? 2 : 1));
  await Promise.all(workers.splice(0).map((w) => w.close(0)));
  h.sim.setRevision(0);
});

it('merge keys include the mandant: equal booking numbers of two mandants are two rows', async () => {
  const job = `${jp}_merge`;
  const table = `${h.schema}.bookings_merge`;
  const config = bookingsConfig(job, table, [7001, 7002], { target: { mode: 'merge', key: ['buchung_nr'] } });
  h.sim.setRevision(0);
  for (const m of [7001, 7002]) expect((await h.run(config, subjectName(job, m))).status).toBe('succeeded');
  // Both mandants book numbers of the same form (yyyymmdd-k): some are equal.
  const nr = (l: string) => l.split('|')[1];
  expect(
    served(7001, 0)
      .map(nr)
      .some((n) => served(7002, 0).map(nr).includes(n)),
  ).toBe(true);
  expect(await loaded(table)).toEqual([...served(7001, 0), ...served(7002, 0)].sort());
  h.sim.setRevision(1);
  expect((await h.run(config, subjectName(job, 7002))).status).toBe('succeeded');
  expect(await loaded(table, 7001)).toEqual(served(7001, 0));
  // Merge keeps the rows revision 1 deleted: the mandant's rows are revision 1's plus those.
  const merged = await loaded(table, 7002);
  expect(served(7002, 1).every((l) => merged.includes(l))).toBe(true);
  h.sim.setRevision(0);
});

/** Bookings of mandants 7001 and 7002 into `table`, asking for and replacing the 3 days before the tick. */
function rangeConfig(job: string, table: string) {
  const from = '%{logicalEnd-3d:yyyy-MM-dd}';
  const to = '%{logicalEnd:yyyy-MM-dd}';
  return bookingsConfig(job, table, [7001, 7002], {
    parameters: { FROM: from, TO: to },
    target: { replaceRange: { column: 'buchungstag', from, to } },
  });
}

/** The request of the nightly run `n` days after 2026-01-10 03:00 UTC. */
const at = (n: number) => ({ scheduledFor: new Date(Date.UTC(2026, 0, 10 + n, 3)).toISOString() });

it('replaceRange with a list of mandants replaces the range of the run mandant alone', async () => {
  const job = `${jp}_range`;
  const table = `${h.schema}.bookings_range`;
  const config = rangeConfig(job, table);
  h.sim.setRevision(0);
  for (const m of [7001, 7002]) expect((await h.run(config, subjectName(job, m), at(0))).status).toBe('succeeded');
  h.sim.setRevision(1);
  expect((await h.run(config, subjectName(job, 7001), at(1))).status).toBe('succeeded');
  const p = (a: string, b: string) => ({ FROM: a, TO: b });
  // 7001: Jan 7 as read at revision 0, Jan 8..10 at revision 1; 7002 untouched.
  expect(await loaded(table, 7001)).toEqual(
    [...served(7001, 0, p('2026-01-07', '2026-01-08')), ...served(7001, 1, p('2026-01-08', '2026-01-11'))].sort(),
  );
  expect(await loaded(table, 7002)).toEqual(served(7002, 0, p('2026-01-07', '2026-01-10')));
  h.sim.setRevision(0);
});

it("a mandant's row outside the period fails its run naming the mandant, row, value and period", async () => {
  const job = `${jp}_outside`;
  const table = `${h.schema}.bookings_outside`;
  const config = rangeConfig(job, table);
  h.sim.setRevision(0);
  for (const m of [7001, 7002]) expect((await h.run(config, subjectName(job, m), at(0))).status).toBe('succeeded');
  const before = await loaded(table, 7002);
  h.sim.setRevision(1);
  // 7002's report asks for two days past the run's period [2026-01-08, 2026-01-11).
  const err = await attemptFailure(
    h.run(config, subjectName(job, 7002), { ...at(1), parameters: { TO: '2026-01-13' } }),
  );
  expect(err.code).toBe('RANGE_VIOLATION');
  expect(err.message).toMatch(
    new RegExp(
      '^page 1, row \\d+ of the run of mandant 7002 has buchungstag \\(report column "Buchungstag"\\) ' +
        `"2026-01-1[12]", outside the run's range \\[2026-01-08, 2026-01-11\\) of target.replaceRange: ${table} ` +
        'is left as it was',
    ),
  );
  expect(await loaded(table, 7002)).toEqual(before);
  // What its alert shows of the request: the parameters sent beside the period the run replaces.
  const { rows } = await h.pool.query<{ request: unknown }>(
    `SELECT request FROM etl.attempts WHERE job = $1 AND status = 'failed'`,
    [subjectName(job, 7002)],
  );
  expect(requestLines(readAttemptRequest(rows[0]!.request)!, (t) => t.toISOString()).slice(-2)).toEqual([
    'parameters: FROM=2026-01-08, TO=2026-01-13',
    'period replaced: buchungstag in [2026-01-08, 2026-01-11)',
  ]);
  expect((await h.run(config, subjectName(job, 7001), at(1))).status).toBe('succeeded');
  expect(await loaded(table, 7002)).toEqual(before);
  h.sim.setRevision(0);
});

it("a later success supersedes a mandant's failed period only when it replaced that period", async () => {
  const job = `${jp}_periods`;
  const table = `${h.schema}.bookings_periods`;
  const from = '%{logicalEnd-3d:yyyy-MM-dd}';
  const to = '%{logicalEnd:yyyy-MM-dd}';
  const target = { replaceRange: { column: 'buchungstag', from, to } };
  const config = bookingsConfig(job, table, [7001, 7002], { parameters: { FROM: from, TO: to }, target });
  const failing = bookingsConfig(job, table, [7001, 7002], {
    parameters: { FROM: from, TO: to, SIM_FAIL_MANDANT: '7001,7002' },
    target,
  });
  const at = (iso: string) => ({ scheduledFor: new Date(iso).toISOString() });
  const failedRun = async (subject: string) => {
    const err = await attemptFailure(h.run(failing, subject, at('2026-01-10T03:00:00Z')));
    expect(err.code).toBe('REPORT_FAILED');
    return (await attemptsOf(h.pool, subject)).at(-1)!.run_key;
  };
  // 7001: a later run of the same period [2026-01-07, 2026-01-10) succeeds: nothing is left to replay.
  const s1 = subjectName(job, 7001);
  const failed1 = await failedRun(s1);
  const later1 = await h.run(config, s1, at('2026-01-10T05:00:00Z'));
  // 7002: a later night's run replaces [2026-01-10, 2026-01-13) alone: the failed period is still to be loaded.
  const s2 = subjectName(job, 7002);
  const failed2 = await failedRun(s2);
  expect((await h.run(config, s2, at('2026-01-13T03:00:00Z'))).status).toBe('succeeded');
  const byRun = new Map(
    [...(await failedRunsToReplay(h.pool, { job: s1 })), ...(await failedRunsToReplay(h.pool, { job: s2 }))].map(
      (f) => [f.run_key, f.superseded_by_run_key],
    ),
  );
  expect(byRun.get(failed1)).toBe(later1.runKey);
  expect(byRun.has(failed2)).toBe(true);
  expect(byRun.get(failed2)).toBeNull();
  // The jobs overview says the same of each mandant's last failure.
  const [health1, health2] = await jobHealth(h.pool, [s1, s2]);
  expect(health1!.lastFailure?.superseded_by_run_key).toBe(later1.runKey);
  expect(health2!.lastFailure?.run_key).toBe(failed2);
  expect(health2!.lastFailure?.superseded_by_run_key).toBeNull();
});

it("a job's first list run refuses a replace target whose rows have no mandant, until they are given one", async () => {
  const job = `${jp}_switch`;
  const table = `${h.schema}.bookings_switch`;
  const single = h.config({
    [job]: {
      ...jobEntry(
        { name: 'Finance/Bookings', mandant: 7001, parameters: PERIOD },
        { table, mode: 'replace', columns: { buchungstag: 'date' } },
      ),
      retry: { attempts: 1, backoffMs: 0 },
    },
  });
  expect((await h.run(single, job)).status).toBe('succeeded');
  const rowsOf = async () =>
    (await h.pool.query<{ r: string }>(`SELECT to_jsonb(t)::text AS r FROM ${table} t`)).rows.map((r) => r.r).sort();
  const before = await rowsOf();
  const list = bookingsConfig(job, table, [7001, 7002]);
  const err = await attemptFailure(h.run(list, subjectName(job, 7001)));
  expect(err.code).toBe('TARGET_INVALID');
  expect(err.message).toContain(
    `job ${job}[7001]: ${table} holds rows but no column mandant, loaded before the job had a list of mandants`,
  );
  const quoted = `"${h.schema}"."bookings_switch"`;
  expect(err.message).toContain(
    `(ALTER TABLE ${quoted} ADD COLUMN "mandant" integer; UPDATE ${quoted} SET "mandant" = 7001; with the mandant ` +
      'they are of)',
  );
  expect(await rowsOf()).toEqual(before);
  // As the message says: the rows get their mandant, and 7001's run replaces them.
  await h.pool.query(`ALTER TABLE ${table} ADD COLUMN mandant integer; UPDATE ${table} SET mandant = 7001`);
  h.sim.setRevision(1);
  for (const m of [7001, 7002]) expect((await h.run(list, subjectName(job, m))).status).toBe('succeeded');
  expect(await loaded(table)).toEqual([...served(7001, 1), ...served(7002, 1)].sort());
  h.sim.setRevision(0);
});

it('a report column named like the mandant column fails the first run before anything is loaded', async () => {
  const job = `${jp}_clash`;
  const table = `${h.schema}.bookings_clash`;
  const clash = bookingsConfig(job, table, [7001, 7002], { target: { mandantColumn: 'buchung_nr' } });
  const err = await attemptFailure(h.run(clash, subjectName(job, 7001)));
  expect(err.code).toBe('CONFIG_INVALID');
  expect(err.message).toContain(
    'the report has a column "Buchung Nr" (loaded as buchung_nr), the name of the column that holds each row\'s ' +
      'mandant: set target.mandantColumn to another name',
  );
  const { rows } = await h.pool.query('SELECT to_regclass($1) AS t', [table]);
  expect(rows[0].t).toBeNull();
});

/**
 * Writes a jobs.yaml of connection `sim` (the harness's simulator, its secret from SIM_SECRET) and `jobs`, the lines
 * under `jobs:`; `cli` runs report-etl with the environment it reads.
 */
async function cliJobs(
  jobs: string,
): Promise<{ configPath: string; cli: (args: string[]) => ReturnType<typeof runCli> }> {
  const configPath = join(await mkdtemp(join(tmpdir(), 'report-etl-mandants-')), 'jobs.yaml');
  await writeFile(
    configPath,
    [...simConnectionLines('${SIM_URL}', 'SIM_SECRET', { pollIntervalMs: 20 }), jobs].join('\n'),
  );
  const cli = (args: string[]) => runCli(args, { env: { SIM_URL: h.sim.url, SIM_SECRET: 'demo-secret' } });
  return { configPath, cli };
}

it('run --mandant runs the mandants asked for, a summary line each; an unknown mandant is a usage error', async () => {
  const table = `${h.schema}.bookings_cli`;
  const books = `${jp}_books`;
  const { configPath, cli } = await cliJobs(
    `  ${books}:
    connection: sim
    report: { mandant: [7001, 7002, 7003], name: Finance/Bookings, parameters: { FROM: "2026-01-01",
      TO: "2026-01-08", SIM_FAIL_MANDANT: "7003" } }
    target: { table: ${table}, columns: { buchungstag: date } }
`,
  );
  const validate = await cli(['validate', '--config', configPath]);
  expect(validate.code, validate.stderr).toBe(0);
  expect(validate.stdout).toContain(
    `  ${books}: no schedule (runs by hand or enqueue only); 3 mandants: 7001, 7002, 7003`,
  );
  const one = await cli(['run', books, '--mandant', '7002', '--config', configPath]);
  expect(one.code, one.stderr).toBe(0);
  expect(one.stdout).toMatch(new RegExp(`^${books}\\[7002\\]: succeeded, \\d+ rows, `));
  expect(await loaded(table)).toEqual(served(7002, 0));
  const all = await cli(['run', books, '--config', configPath]);
  expect(all.code, all.stderr).toBe(1);
  const lines = all.stdout.trim().split('\n');
  expect(lines.map((l) => l.split(':')[0])).toEqual([7001, 7002, 7003].map((m) => `${books}[${m}]`));
  expect(lines[2]).toContain(`${books}[7003]: failed (REPORT_FAILED)`);
  expect(await loaded(table)).toEqual([...served(7001, 0), ...served(7002, 0)].sort());
  const preview = await cli(['preview', books, '--mandant', '7002', '--rows', '1', '--config', configPath]);
  expect(preview.code, preview.stderr).toBe(0);
  expect(preview.stdout).toContain(
    `a load replaces the rows of mandant 7002 (mandant = 7002) of ${table} (it holds ${served(7002, 0).length})`,
  );
  const runs = await cli(['runs', '--job', books, '--config', configPath]);
  expect(runs.code, runs.stderr).toBe(0);
  expect(runs.stdout.split('\n').filter((l) => l.includes(` ${books}[700`))).toHaveLength(4);
  const unknown = await cli(['run', books, '--mandant', '9999', '--config', configPath]);
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toContain(`--mandant 9999: not a mandant of job "${books}" (its mandants: 7001, 7002, 7003)`);
});

it("preview of a mandant's run with replaceRange counts and names that mandant's rows of the period", async () => {
  const table = `${h.schema}.bookings_cli_range`;
  const books = `${jp}_rbooks`;
  const { configPath, cli } = await cliJobs(
    `  ${books}:
    connection: sim
    report: { mandant: [7001, 7002], name: Finance/Bookings, parameters: { FROM: "2026-01-01", TO: "2026-01-08" } }
    target:
      table: ${table}
      columns: { buchungstag: date }
      replaceRange: { column: buchungstag, from: "2026-01-01", to: "2026-01-08" }
`,
  );
  const loadedRun = await cli(['run', books, '--config', configPath]);
  expect(loadedRun.code, loadedRun.stderr).toBe(0);
  const preview = await cli(['preview', books, '--mandant', '7002', '--rows', '1', '--config', configPath]);
  expect(preview.code, preview.stderr).toBe(0);
  const n = served(7002, 0).length;
  expect(preview.stdout).toContain(
    `a load replaces the period buchungstag in [2026-01-01, 2026-01-08) of mandant 7002 (mandant = 7002) of ` +
      `${table} (it holds ${n}) with the report's ${n} rows, in one transaction; rows outside the period and the ` +
      "other mandants' rows stay",
  );
});

it("maxShrinkPercent measures a mandant's run against that mandant's rows alone", async () => {
  const job = `${jp}_guard`;
  const table = `${h.schema}.bookings_guard`;
  const config = bookingsConfig(job, table, [7001, 7002], { target: { guard: { maxShrinkPercent: 30 } } });
  h.sim.setRevision(0);
  for (const m of [7001, 7002]) expect((await h.run(config, subjectName(job, m))).status).toBe('succeeded');
  // Revision 1 keeps most of 7001's rows: within 30% of its own, though half the table's.
  h.sim.setRevision(1);
  expect(served(7001, 1).length).toBeGreaterThanOrEqual(served(7001, 0).length * 0.7);
  expect(served(7001, 1).length).toBeLessThan((served(7001, 0).length + served(7002, 0).length) * 0.7);
  expect((await h.run(config, subjectName(job, 7001))).status).toBe('succeeded');
  expect(await loaded(table, 7001)).toEqual(served(7001, 1));
  // One day of bookings instead of seven shrinks 7001's rows by more than 30%: the guard trips, nothing changes.
  const oneDay = { parameters: { FROM: '2026-01-01', TO: '2026-01-02' } };
  const err = await attemptFailure(h.run(config, subjectName(job, 7001), oneDay));
  expect(err.code).toBe('GUARD_TRIPPED');
  expect(err.message).toContain(`where ${table} (mandant 7001) holds ${served(7001, 1).length}`);
  expect(await loaded(table)).toEqual([...served(7001, 1), ...served(7002, 0)].sort());
  h.sim.setRevision(0);
});

it("append tags a mandant's rows with its own run key: reverting one mandant's run removes its rows", async () => {
  const job = `${jp}_append`;
  const table = `${h.schema}.bookings_append`;
  const config = bookingsConfig(job, table, [7001, 7002], { target: { mode: 'append' } });
  const tick = new Date('2026-01-08T03:00:00Z');
  const request = (m: number) => ({
    trigger: 'schedule' as const,
    scheduledFor: tick.toISOString(),
    runKey: tickQueueJobId(subjectName(job, m), tick),
  });
  for (const m of [7001, 7002]) expect((await h.run(config, subjectName(job, m), request(m))).status).toBe('succeeded');
  // The same run again appends nothing: it is exactly-once per mandant's run key.
  expect((await h.run(config, subjectName(job, 7001), request(7001))).status).toBe('already-loaded');
  expect(await loaded(table)).toEqual([...served(7001, 0), ...served(7002, 0)].sort());
  const outcome = await revertAppendedRun(h.pool, subjectName(job, 7001), request(7001).runKey);
  expect(outcome).toMatchObject({ kind: 'reverted', rows: served(7001, 0).length });
  expect(await loaded(table)).toEqual(served(7002, 0));
});

it('the metrics carry each mandant of a job in a mandant label beside the job', async () => {
  const job = `${jp}_metrics`;
  const table = `${h.schema}.bookings_metrics`;
  const config = bookingsConfig(job, table, [7001, 7002]);
  for (const m of [7001, 7002]) expect((await h.run(config, subjectName(job, m))).status).toBe('succeeded');
  const metrics = makeAdminMetrics({ pool: h.pool, redis: h.redis, queue, config: staticConfig(config) });
  const text = await metrics.render();
  for (const m of [7001, 7002]) {
    expect(text).toContain(`report_etl_attempts_total{job="${job}",status="succeeded",mandant="${m}"} 1`);
    expect(text).toContain(`report_etl_rows_loaded_total{job="${job}",mandant="${m}"} ${served(m, 0).length}`);
    expect(text).toMatch(new RegExp(`report_etl_job_failing\\{job="${job}",connection="sim",mandant="${m}"\\} 0`));
  }
  expect(text).not.toContain(`job="${job}[`);
});

it("validate with the database wants a merge target's unique index on the key and the mandant column", () => {
  const catalogue = new Map([['public.t', { relkind: 'r', columns: ['nr', 'x', 'mandant'], uniqueKeys: [['nr']] }]]);
  const target = { table: 't', mode: 'merge', key: ['nr'] };
  expect(jobTargetProblems(target, catalogue)).toEqual([]);
  expect(jobTargetProblems(target, catalogue, 'mandant')).toEqual([
    {
      path: ['target', 'key'],
      text:
        'the target public.t has no primary key or unique index on (nr, mandant): a merge finds the rows it updates ' +
        'by one, so every run would fail; add it: CREATE UNIQUE INDEX ON public.t (nr, mandant)',
    },
  ]);
  const indexed = new Map([['public.t', { ...catalogue.get('public.t')!, uniqueKeys: [['mandant', 'nr']] }]]);
  expect(jobTargetProblems(target, indexed, 'mandant')).toEqual([]);
});
