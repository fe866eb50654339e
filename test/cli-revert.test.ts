/**
 * `report-etl revert` as on-call staff use it (README "Commands"): two runs appended with `report-etl run`, one
 * reverted by its run key — exactly its rows leave the target, the other's stay, etl.reverts records it and its claim
 * in etl.appended_runs is gone; a second revert is refused; `report-etl replay` then appends it again (a worker takes
 * the replay); a documents run likewise; and the refusals (not an append, not loaded, rows appended before lineage),
 * each with exit 2 and what to do. A child process with a jobs.yaml, the simulator over real HTTP, real PostgreSQL.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunWorker } from '../src/queue/worker.ts';
import { lines, runCli, simConnectionLines } from './support/cli.ts';
import { uniqueName } from './support/env.ts';
import { jobEntry, loadedRows, servedRows } from './support/harness.ts';
import { attemptsOf, useQueueBench, waitFor, workerOf } from './support/queue-env.ts';

/** A time as commands print it (src/time-text.ts): the job's zone with its offset, or UTC marked Z. */
const TIME = '\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d(?:Z|[+-]\\d\\d:\\d\\d)';
const prefix = uniqueName('qv');
const jp = uniqueName('jv');
const { h } = useQueueBench(prefix, jp, { jobDurationMs: 20 });
let dir: string;
let path: string;
const workers: RunWorker[] = [];

/** name → [report, output type, write mode] of this file's jobs; every target is `<schema>.<name without prefix>`. */
let jobs: Record<string, [string, string, 'replace' | 'append']>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'report-etl-revert-'));
  path = join(dir, 'jobs.yaml');
  jobs = {
    [`${jp}_ledger`]: ['Finance/Ledger.avx', 'json', 'append'],
    [`${jp}_old`]: ['Finance/Ledger.avx', 'txt', 'append'],
    [`${jp}_stock`]: ['Stock/Levels', 'json', 'replace'],
    [`${jp}_failing`]: ['Failing', 'json', 'append'],
    [`${jp}_docs`]: ['Stock/Levels', 'pdf', 'append'],
  };
  const yaml = [...simConnectionLines(h.sim.url, 'QV_SECRET', { pollIntervalMs: 20 })];
  for (const [name, [report, outputType, mode]] of Object.entries(jobs)) {
    yaml.push(
      `  ${name}:`,
      '    connection: sim',
      `    report: { mandant: 7777, name: ${report}, outputType: ${outputType}, ` +
        `paging: 30, parameters: { ROWS: "60" } }`,
      `    target: { table: ${table(name)}, mode: ${mode} }`,
    );
  }
  writeFileSync(path, `${yaml.join('\n')}\n`);
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.close(0)));
  rmSync(dir, { recursive: true, force: true });
});

function table(job: string): string {
  return `${h.schema}.${job.slice(jp.length + 1)}`;
}

/**
 * Runs the CLI as a user would (with this file's jobs.yaml for the commands that read one); returns exit code, stdout
 * lines and stderr.
 */
async function cli(...args: string[]): Promise<{ code: number | null; out: string[]; err: string }> {
  const config = ['run', 'replay'].includes(args[0]!) ? ['--config', path] : [];
  const r = await runCli([...args, ...config], { env: { QV_SECRET: 'demo-secret', LOG_LEVEL: 'warn' } });
  return { code: r.code, out: lines(r.stdout), err: r.stderr };
}

async function count(sql: string, values: unknown[] = []): Promise<number> {
  const { rows } = await h.pool.query<{ n: number }>(sql, values);
  return rows[0]!.n;
}

it(
  'reverts one of two appended runs exactly, records it, ' +
    'refuses a second revert, and a replay appends the run again',
  async () => {
    const job = `${jp}_ledger`;
    const target = table(job);
    // Two runs of different sizes, so that what stays can be compared with what the server served.
    expect((await cli('run', job, '--run-key', 'monday', '-p', 'ROWS=120')).code).toBe(0);
    expect((await cli('run', job, '--run-key', 'tuesday', '-p', 'ROWS=80')).code).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM ${target}`)).toBe(200);
    const monday = (await attemptsOf(h.pool, job)).find((a) => a.run_key === 'monday')!;

    const reverted = await cli('revert', 'monday', '--job', job);
    expect(reverted.code, reverted.err).toBe(0);
    expect(reverted.out).toHaveLength(1);
    expect(reverted.out[0]).toMatch(
      new RegExp(
        `^run monday of job ${job}: reverted: removed 120 rows from ${target} \\(appended by attempt ` +
          `${monday.attempt_id} at ${TIME}\\); recorded as revert \\d+ at ${TIME}\\. "report-etl replay monday --job ` +
          `${job}" appends it again$`,
      ),
    );
    // Exactly monday's rows are gone: what is left is tuesday's, value for value.
    expect(await loadedRows(h.pool, target, 'Finance/Ledger.avx', { ROWS: '80' })).toEqual(
      servedRows('Finance/Ledger.avx', { ROWS: '80' }, 1),
    );
    expect(await count(`SELECT count(*)::int AS n FROM ${target} WHERE _etl_run_key = 'tuesday'`)).toBe(80);
    // The history: the revert, no claim for monday (tuesday's stays), monday's rows back to NULL, its attempts as
    // they were.
    const { rows: reverts } = await h.pool.query(
      `SELECT run_key, attempt_id, after_attempt, target_table, appended_rows::int, rows::int, reverted_by FROM ` +
        `etl.reverts WHERE job = $1`,
      [job],
    );
    expect(reverts).toEqual([
      {
        run_key: 'monday',
        attempt_id: monday.attempt_id,
        after_attempt: 1,
        target_table: target,
        appended_rows: 120,
        rows: 120,
        reverted_by: expect.stringContaining('@'),
      },
    ]);
    const { rows: claims } = await h.pool.query(
      `SELECT run_key FROM etl.appended_runs WHERE job = $1 ORDER BY run_key`,
      [job],
    );
    expect(claims).toEqual([{ run_key: 'tuesday' }]);
    const { rows: runs } = await h.pool.query(
      `SELECT run_key, status, rows::int FROM etl.runs WHERE job = $1 ORDER BY run_key`,
      [job],
    );
    expect(runs).toEqual([
      { run_key: 'monday', status: 'succeeded', rows: null },
      { run_key: 'tuesday', status: 'succeeded', rows: 80 },
    ]);

    // `runs` says so, until an attempt runs again.
    const listed = await cli('runs', '--job', job);
    expect(listed.out.find((l) => l.startsWith('monday '))).toMatch(/ succeeded \(reverted\) +1 /);
    expect(listed.out.find((l) => l.startsWith('tuesday '))).not.toContain('reverted');

    // Twice: refused, nothing changes.
    const again = await cli('revert', 'monday', '--job', job);
    expect(again.code).toBe(2);
    expect(again.out).toEqual([]);
    expect(again.err).toMatch(
      new RegExp(
        `^report-etl revert: run monday of job ${job}: not reverted: it was already reverted at ${TIME} ` +
          `by \\S+@\\S+: ` +
          `its 120 rows were removed from ${target}; "report-etl replay monday" appends it again\\n$`,
      ),
    );
    expect(await count(`SELECT count(*)::int AS n FROM ${target}`)).toBe(80);

    // Replayed: a worker appends monday again, tagged with its run key.
    workers.push(
      workerOf(
        h,
        () =>
          h.config(
            Object.fromEntries(
              Object.entries(jobs).map(([name, [report, outputType, mode]]) => [
                name,
                jobEntry(
                  { name: report, outputType, paging: 30, parameters: { ROWS: '120' } },
                  { table: table(name), mode },
                ),
              ]),
            ),
          ),
        { prefix },
      ),
    );
    const replay = await cli('replay', 'monday', '--job', job, '--queue-prefix', prefix);
    expect(replay.code, replay.err).toBe(0);
    expect(replay.out[0]).toMatch(
      new RegExp(
        `^run monday of job ${job}: replay of the run queued as \\S+, after its reverted attempt ${monday.attempt_id}$`,
      ),
    );
    await waitFor('the replay to append monday again', () =>
      count(`SELECT count(*)::int AS n FROM etl.appended_runs WHERE job = $1 AND run_key = 'monday'`, [job]),
    );
    expect(await count(`SELECT count(*)::int AS n FROM ${target} WHERE _etl_run_key = 'monday'`)).toBe(120);
    expect(await count(`SELECT count(*)::int AS n FROM ${target}`)).toBe(200);
    const { rows: after } = await h.pool.query(
      `SELECT attempts, status, rows::int FROM etl.runs WHERE job = $1 AND run_key = 'monday'`,
      [job],
    );
    expect(after).toEqual([{ attempts: 2, status: 'succeeded', rows: 120 }]);
    expect((await cli('runs', '--job', job)).out.find((l) => l.startsWith('monday '))).not.toContain('reverted');

    // Appended again, it can be reverted again, this time named by the replay's attempt.
    const replayed = (await attemptsOf(h.pool, job)).find((a) => a.run_key === 'monday' && a.attempt === 2)!;
    const second = await cli('revert', replayed.attempt_id);
    expect(second.code, second.err).toBe(0);
    expect(second.out[0]).toMatch(
      new RegExp(
        `^attempt ${replayed.attempt_id} \\(attempt 2 of run monday of job ${job}\\): reverted: removed 120 rows ` +
          `from ${target} `,
      ),
    );
    expect(
      await count(
        `SELECT count(*)::int AS n FROM etl.reverts WHERE job = $1 AND run_key = 'monday' AND after_attempt = 2`,
        [job],
      ),
    ).toBe(1);
    expect(await count(`SELECT count(*)::int AS n FROM ${target}`)).toBe(80);
  },
);

it('suggests the replay command quoted for a shell, whatever the run key holds', async () => {
  const job = `${jp}_ledger`;
  const key = "it's $(touch x) monday";
  expect((await cli('run', job, '--run-key', key, '-p', 'ROWS=3')).code).toBe(0);
  const quoted = `'it'\\''s $(touch x) monday'`;
  const reverted = await cli('revert', key, '--job', job);
  expect(reverted.code, reverted.err).toBe(0);
  expect(reverted.out[0]).toContain(`"report-etl replay ${quoted} --job ${job}" appends it again`);
  const again = await cli('revert', key, '--job', job);
  expect(again.code).toBe(2);
  expect(again.err).toContain(`"report-etl replay ${quoted}" appends it again`);
});

it("reverts an appended documents run: its archived files leave the target, the other run's stay", async () => {
  const job = `${jp}_docs`;
  const target = table(job);
  for (const key of ['doc1', 'doc2']) expect((await cli('run', job, '--run-key', key)).code).toBe(0);
  const { rows: before } = await h.pool.query(
    `SELECT file_name, sha256 FROM ${target} WHERE _etl_run_key = 'doc2' ORDER BY page`,
  );
  expect(before.length).toBeGreaterThan(0);
  const r = await cli('revert', 'doc1', '--job', job);
  expect(r.code, r.err).toBe(0);
  expect(r.out[0]).toContain(`reverted: removed ${before.length} rows from ${target}`);
  const { rows: after } = await h.pool.query(`SELECT file_name, sha256 FROM ${target} ORDER BY page`);
  expect(after).toEqual(before);
  // The reverted run's listing stays in the history; its files are gone, and `documents` says so.
  const docs = await cli('documents', 'doc1', '--job', job, '--out', join(dir, 'docs'));
  expect(docs.code).toBe(1);
  expect(docs.err).toContain("or report-etl revert removed its run's rows");
});

it('refuses what it cannot revert, with exit 2, the reason and what to do, and changes nothing', async () => {
  const stock = `${jp}_stock`;
  expect((await cli('run', stock, '--run-key', 'full')).code).toBe(0);
  const replace = await cli('revert', 'full', '--job', stock);
  expect(replace.code).toBe(2);
  expect(replace.err).toContain(
    `run full of job ${stock}: not reverted: it loaded ${table(stock)} in write mode replace: only the rows of an ` +
      `append run can be reverted`,
  );

  const failing = `${jp}_failing`;
  expect((await cli('run', failing, '--run-key', 'broken')).code).toBe(1);
  const failed = await cli('revert', 'broken', '--job', failing);
  expect(failed.code).toBe(2);
  expect(failed.err).toContain(
    `run broken of job ${failing}: not reverted: it appended no rows: its newest attempt (1) failed; nothing to revert`,
  );

  const unknown = await cli('revert', 'never');
  expect(unknown.code).toBe(2);
  expect(unknown.err).toContain('no run with run key "never" and no attempt with that id');
  expect(await count(`SELECT count(*)::int AS n FROM etl.reverts WHERE job = ANY($1)`, [[stock, failing]])).toBe(0);
  expect(await count(`SELECT count(*)::int AS n FROM ${table(stock)}`)).toBe(60);
});

it('refuses a run appended before its target had lineage columns, saying how to delete its rows by hand', async () => {
  const job = `${jp}_old`;
  const target = table(job);
  expect((await cli('run', job, '--run-key', 'before')).code).toBe(0);
  // As an append target loaded before lineage was kept: no lineage columns, the run's claim in etl.appended_runs.
  await h.pool.query(`ALTER TABLE ${target} DROP COLUMN _etl_run_key, DROP COLUMN _etl_loaded_at`);
  const n = await count(`SELECT count(*)::int AS n FROM ${target}`);

  const noColumn = await cli('revert', 'before', '--job', job);
  expect(noColumn.code).toBe(2);
  expect(noColumn.err).toContain(
    `run before of job ${job}: not reverted: ${target} has no _etl_run_key column: the run appended its ${n} rows (at `,
  );
  expect(noColumn.err).toContain(
    `DELETE FROM etl.appended_runs WHERE job = '${job}' AND run_key = 'before'; lets "report-etl replay" ` +
      `append the run again`,
  );

  // The next append gives the target the columns; the older run's rows stay untagged (NULL).
  expect((await cli('run', job, '--run-key', 'after')).code).toBe(0);
  expect(
    await count(`SELECT count(*)::int AS n FROM ${target} WHERE _etl_run_key IS NULL AND _etl_loaded_at IS NULL`),
  ).toBe(n);
  const untagged = await cli('revert', 'before', '--job', job);
  expect(untagged.code).toBe(2);
  expect(untagged.err).toContain(
    `run before of job ${job}: not reverted: no row of ${target} carries run key before: ` +
      `the run appended its ${n} rows (at `,
  );
  expect(untagged.err).toContain('nothing was changed');
  expect(await count(`SELECT count(*)::int AS n FROM ${target}`)).toBe(2 * n);
  expect(await count(`SELECT count(*)::int AS n FROM etl.appended_runs WHERE job = $1`, [job])).toBe(2);

  // The run appended after it reverts as any other.
  const r = await cli('revert', 'after', '--job', job);
  expect(r.code, r.err).toBe(0);
  expect(await count(`SELECT count(*)::int AS n FROM ${target} WHERE _etl_run_key IS NULL`)).toBe(n);
  expect(await count(`SELECT count(*)::int AS n FROM ${target}`)).toBe(n);
});
