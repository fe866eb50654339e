/**
 * Guards and schema changes of a target (docs/loaded-tables.md "Guards and schema changes"), run against the simulator
 * over HTTP and a real PostgreSQL: an empty replace never empties the table, a replace that would shrink it past
 * maxShrinkPercent is stopped, `replay --accept-guard` loads it anyway and the history says so; under `schemaChanges:
 * freeze` a report whose columns differ fails listing the difference. Every stopped run leaves the target exactly as it
 * was, is recorded failed (not retryable), and its report job is deleted.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { getAttempt } from '../src/history/attempts.ts';
import { listRunErrors as getRunErrors } from '../src/history/attempt-list.ts';
import type { AttemptOptions } from '../src/pipeline/run-attempt.ts';
import { makeQueue } from '../src/queue/queue.ts';
import { renderAttemptPage } from '../src/admin/attempt-page.ts';
import { getRun } from '../src/history/runs.ts';
import { lines, runCli, simConnectionLines } from './support/cli.ts';
import { uniqueName } from './support/env.ts';
import { attemptFailure, columnTypes, type Harness, jobEntry, useHarness } from './support/harness.ts';
import { deleteKeys } from './support/queue-env.ts';

const h = useHarness();

/** Runs an attempt that must fail; returns its error and recorded attempt. */
async function failing(config: ReturnType<Harness['config']>, job: string, request: AttemptOptions['request'] = {}) {
  const failed = await attemptFailure(h.run(config, job, request));
  const attempt = await getAttempt(h.pool, failed.attemptId);
  const errors = await getRunErrors(h.pool, failed.attemptId);
  return { err: failed, attempt: attempt!, errors };
}

const count = async (table: string) => Number((await h.pool.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
const checksum = async (table: string) =>
  (await h.pool.query(`SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS m FROM ${table} t`)).rows[0]
    .m as string;

describe('target.guard', () => {
  it(
    'an empty report without columns into a target that does not exist: the guard says no table exists, and an ' +
      'accepted run says it created none',
    async () => {
      const table = `${h.schema}.${uniqueName('empty_replace')}`;
      const config = h.config({ e: jobEntry({ name: 'Empty' }, { table, mode: 'replace' }) });
      const { err } = await failing(config, 'e');
      expect(err.code).toBe('GUARD_TRIPPED');
      expect(err.message).toContain(`${table} does not exist, and no table was created`);
      expect(err.message).not.toContain('left as it was');

      const accepted = await h.run(config, 'e', { acceptGuard: true });
      expect(accepted.status).toBe('succeeded');
      expect(accepted.noTarget).toContain(`${table} was not created and does not exist`);
      const attempt = (await getAttempt(h.pool, accepted.attemptId))!;
      expect(attempt.accepted_guard).toContain('the report returned 0 rows and target.guard.minRows is 1');
      expect(attempt.accepted_guard).toContain('no table: the report had no rows and no columns');
      const { rows } = await h.pool.query('SELECT to_regclass($1) AS t', [table]);
      expect(rows[0].t).toBeNull();
    },
  );

  it(
    'an empty replace result fails with GUARD_TRIPPED and leaves the table as it was (minRows 1 by default); ' +
      'minRows 0 lets it empty the table',
    async () => {
      const table = `${h.schema}.guard_empty`;
      const job = (rows: string, guard?: Record<string, unknown>) =>
        h.config({
          g: jobEntry(
            { name: 'Sales/Orders', outputType: 'json', parameters: { ROWS: rows } },
            { table, mode: 'replace', ...(guard ? { guard } : {}) },
          ),
        });
      await h.run(job('300'), 'g');
      const before = await checksum(table);

      const { err, attempt, errors } = await failing(job('0'), 'g');
      expect(err.code).toBe('GUARD_TRIPPED');
      expect(err.retryable).toBe(false);
      expect(err.message).toContain(
        'the report returned 0 rows and target.guard.minRows is 1 (the default for replace)',
      );
      expect(err.message).toContain(`${table} is left as it was`);
      expect(err.message).toMatch(/report-etl replay \S+ --accept-guard/);
      expect(attempt.status).toBe('failed');
      expect(errors[0]).toMatchObject({
        error_kind: 'GUARD_TRIPPED',
        stage: 'load',
        retryable: false,
        details: { guard: 'minRows', rows: 0, minRows: 1 },
      });
      expect(await count(table)).toBe(300);
      expect(await checksum(table)).toBe(before);

      await h.run(job('0', { minRows: 0 }), 'g');
      expect(await count(table)).toBe(0);
    },
  );

  it('minRows applies to append too, and to documents by their count', async () => {
    const table = `${h.schema}.guard_append`;
    const config = h.config({
      a: jobEntry(
        { name: 'Sales/Orders', outputType: 'json', parameters: { ROWS: '20' } },
        { table, mode: 'append', guard: { minRows: 50 } },
      ),
    });
    const { err } = await failing(config, 'a');
    expect(err.code).toBe('GUARD_TRIPPED');
    expect(err.message).toContain('the report returned 20 rows and target.guard.minRows is 50');
    expect((await h.pool.query('SELECT to_regclass($1) AS t', [table])).rows[0].t).toBeNull();

    const docs = `${h.schema}.guard_docs`;
    const pdf = h.config({
      d: jobEntry(
        { name: 'Sales/Orders', outputType: 'pdf', paging: 100, parameters: { ROWS: '250' } },
        { table: docs, mode: 'append', guard: { minRows: 4 } },
      ),
    });
    const trip = await failing(pdf, 'd');
    expect(trip.err.code).toBe('GUARD_TRIPPED');
    expect(trip.err.message).toContain('the report returned 3 rows and target.guard.minRows is 4');
    expect((await h.pool.query('SELECT to_regclass($1) AS t', [docs])).rows[0].t).toBeNull();
  });

  it(
    'maxShrinkPercent stops a replace that would shrink the table more, ' + 'measured against the rows it holds now',
    async () => {
      const table = `${h.schema}.guard_shrink`;
      const job = (rows: string) =>
        h.config({
          s: jobEntry(
            { name: 'Sales/Orders', outputType: 'txt', parameters: { ROWS: rows } },
            { table, mode: 'replace', guard: { maxShrinkPercent: 50 } },
          ),
        });
      await h.run(job('1000'), 's');
      const before = await checksum(table);
      const { err, errors } = await failing(job('400'), 's');
      expect(err.code).toBe('GUARD_TRIPPED');
      expect(err.message).toContain(
        `the report returned 400 rows where ${table} holds 1000, 60% fewer, and target.guard.maxShrinkPercent is 50`,
      );
      expect(errors[0]!.details).toMatchObject({
        guard: 'maxShrinkPercent',
        rows: 400,
        currentRows: 1000,
        shrinkPercent: 60,
        maxShrinkPercent: 50,
      });
      expect(await checksum(table)).toBe(before);
      // Half as many is within the limit; growing is always fine.
      await h.run(job('500'), 's');
      expect(await count(table)).toBe(500);
      await h.run(job('2000'), 's');
      expect(await count(table)).toBe(2000);
    },
  );

  it('validate refuses maxShrinkPercent on a mode that never removes rows', async () => {
    expect(() =>
      h.config({
        x: jobEntry(
          { name: 'Sales/Orders' },
          { table: `${h.schema}.x`, mode: 'append', guard: { maxShrinkPercent: 10 } },
        ),
      }),
    ).toThrow(/maxShrinkPercent guards mode replace only \(mode is append/);
  });

  it(
    '`replay --accept-guard` queues the run to load past its guard, ' + 'and its attempt records the guard it passed',
    async () => {
      const prefix = uniqueName('qg');
      const dir = mkdtempSync(join(tmpdir(), 'report-etl-guard-'));
      const path = join(dir, 'jobs.yaml');
      const job = uniqueName('guarded');
      const table = `${h.schema}.${job}`;
      writeFileSync(
        path,
        [
          ...simConnectionLines(h.sim.url, 'QG_SECRET', { pollIntervalMs: 20 }),
          `  ${job}:`,
          '    connection: sim',
          '    report: { mandant: 7777, name: Sales/Orders, outputType: json, paging: 100, parameters: { ROWS: "8" } }',
          `    target: { table: ${table}, mode: replace }`,
          '',
        ].join('\n'),
      );
      const queue = makeQueue(h.redis, prefix);
      try {
        const config = h.config({
          [job]: jobEntry(
            { name: 'Sales/Orders', outputType: 'json', parameters: { ROWS: '8' } },
            { table, mode: 'replace' },
          ),
        });
        await h.run(config, job);
        // The run asked for an empty result (explicit parameters are kept with the run, and a replay asks again).
        const runKey = uniqueName('rk');
        const { err } = await failing(config, job, { runKey, parameters: { ROWS: '0' } });
        expect(err.code).toBe('GUARD_TRIPPED');

        const cli = (...args: string[]) =>
          runCli([...args, '--config', path, '--queue-prefix', prefix], {
            env: { QG_SECRET: 'demo-secret', LOG_LEVEL: 'warn' },
          });
        const refused = await cli('replay', '--failed', '--accept-guard');
        expect(refused.code).toBe(2);
        expect(refused.stderr).toContain('--accept-guard goes with one run key');

        // A run that failed for another reason has no guard to accept.
        const otherKey = uniqueName('rk');
        const badType = h.config({
          [job]: jobEntry(
            { name: 'Sales/Orders', outputType: 'json', parameters: { ROWS: '8' } },
            { table, mode: 'replace', columns: { kunde: 'nosuchtype' } },
          ),
        });
        expect((await failing(badType, job, { runKey: otherKey })).err.code).toBe('CONFIG_INVALID');
        const notGuard = await cli('replay', otherKey, '--accept-guard');
        expect(notGuard.code).toBe(2);
        expect(notGuard.stderr).toContain(
          `was not stopped by its target's guard (its attempt 1 failed with CONFIG_INVALID): ` +
            `replay it without --accept-guard`,
        );

        const r = await cli('replay', runKey, '--accept-guard');
        expect(r.code).toBe(0);
        // Queued is not running: with no worker on the queue, it says so.
        expect(r.stderr).toBe(
          `note: no worker is taking runs from queue prefix "${prefix}" now: the replay runs once one starts ` +
            `(npx report-etl worker, or start)\n`,
        );
        // replay --failed leaves the run to the replay already queued for it.
        const plan = await cli('replay', '--failed', '--dry-run', '--job', job);
        const retrying = lines(plan.stdout).join('\n');
        expect(retrying).toMatch(new RegExp(`the queue still retries[^]*${runKey}`));
        expect(retrying).toMatch(
          new RegExp(`would queue 1 failed run:[^]*${otherKey}[^]*skipped 1 failed run the queue still retries`),
        );
        expect(lines(r.stdout).join('\n')).toContain(", past its target's guard");
        const queued = await queue.getJobs(['waiting', 'prioritized', 'delayed']);
        const replay = queued.find((q) => q.data.runKey === runKey);
        expect(replay?.id).toMatch(/__replay_[0-9a-f-]{36}_accept_guard$/);
        expect(replay!.data).toMatchObject({
          job,
          runKey,
          trigger: 'replay',
          acceptGuard: true,
          parameters: { ROWS: '0' },
        });

        // What a worker does with the queued run: runAttempt with its data as the request.
        const { job: _j, ...request } = replay!.data;
        const done = await h.run(config, job, request);
        expect(done).toMatchObject({ status: 'succeeded', rows: 0 });
        expect(await count(table)).toBe(0);
        const attempt = await getAttempt(h.pool, done.attemptId);
        expect(attempt!.accepted_guard).toContain('the report returned 0 rows and target.guard.minRows is 1');
        expect(attempt!.trigger).toBe('replay');
        const page = renderAttemptPage(attempt!, (await getRun(h.pool, job, runKey))!, [], []);
        expect(page).toContain('Loaded past its guard');
      } finally {
        await queue.close();
        await deleteKeys(h.redis, prefix);
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});

describe('target.schemaChanges', () => {
  it(
    'freeze fails a run whose columns differ, listing added, missing and type-changed columns, ' +
      'and the table stays as it was',
    async () => {
      const table = `${h.schema}.frozen`;
      const job = (report: string, columns: Record<string, string> = {}) =>
        h.config({
          f: jobEntry(
            { name: report, outputType: 'json', parameters: { ROWS: '40' } },
            { table, mode: 'replace', schemaChanges: 'freeze', columns },
          ),
        });
      await h.run(job('Sales/Orders'), 'f');
      const types = await columnTypes(h.pool, table);
      const before = await checksum(table);
      // The same report again is no change at all.
      await h.run(job('Sales/Orders'), 'f');

      // Another report into the frozen table: every column differs.
      const { err, errors, attempt } = await failing(job('Drift'), 'f');
      expect(err.code).toBe('SCHEMA_CHANGED');
      expect(err.retryable).toBe(false);
      expect(err.message).toContain(
        'target.schemaChanges: freeze: added nr, wert; missing auftrag_nr, kunde, menge_stk, betrag, ' +
          'rabatt, erfasst_am, bemerkung, beleg_id',
      );
      expect(err.message).toContain('set schemaChanges: evolve');
      expect(errors[0]!.details).toMatchObject({
        table,
        added: ['nr', 'wert'],
        missing: ['auftrag_nr', 'kunde', 'menge_stk', 'betrag', 'rabatt', 'erfasst_am', 'bemerkung', 'beleg_id'],
        typeChanged: [],
      });
      expect(await columnTypes(h.pool, table)).toEqual(types);
      expect(await checksum(table)).toBe(before);

      // A declared type other than the table's.
      const typed = await failing(job('Sales/Orders', { menge_stk: 'numeric' }), 'f');
      expect(typed.err.message).toContain('type changed menge_stk (bigint in the table, numeric declared)');
      expect(await checksum(table)).toBe(before);

      // The attempt's page shows the difference as a table.
      const page = renderAttemptPage(attempt, (await getRun(h.pool, 'f', attempt.run_key))!, errors, []);
      expect(page).toContain('<table class="schema-difference">');
      expect(page).toContain('<tr class="added"><td>nr</td><td>added</td>');
      expect(page).toContain('<tr class="missing"><td>kunde</td><td>missing</td>');
    },
  );

  it('evolve (the default) adds the new columns', async () => {
    const table = `${h.schema}.evolving`;
    await h.run(
      h.config({
        e: jobEntry({ name: 'Drift', outputType: 'json', parameters: { ROWS: '10' } }, { table, mode: 'append' }),
      }),
      'e',
    );
    await h.run(
      h.config({
        e: jobEntry(
          { name: 'Sales/Orders', outputType: 'json', parameters: { ROWS: '10' } },
          { table, mode: 'append' },
        ),
      }),
      'e',
    );
    expect(Object.keys(await columnTypes(h.pool, table))).toEqual(
      expect.arrayContaining(['nr', 'wert', 'auftrag_nr', 'kunde']),
    );
    expect(await count(table)).toBe(20);
  });
});
