/**
 * The names jobs.yaml gives a target, as a user meets them: `report-etl validate` (the real CLI, against the real
 * PostgreSQL) refuses key and column names that are not normalised, names longer than PostgreSQL's 63 bytes, and jobs
 * that write one table with different write modes or keys; it reads the catalogue to check the names of a target that
 * exists, and says so when PostgreSQL cannot be read. A target that does not exist yet is checked by the first run and
 * by `preview`, against the report's columns, before anything is loaded.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliExit } from './support/cli.ts';
import { uniqueName } from './support/env.ts';
import { startHarness, type Harness } from './support/harness.ts';
import { attemptsOf, deleteKeys, deleteRuns } from './support/queue-env.ts';

let h: Harness;
let dir: string;
const jp = uniqueName('names');
const prefix = uniqueName('namesq');
/** The end of every "not a normalised column name" problem: the naming rule and where it is written. */
const RULES =
  '(report columns are loaded lower case, umlauts as ae oe ue ss, every other run of characters as _; ' +
  'docs/loaded-tables.md "Column names")';
/** The end of every shared-target problem. */
const SHARED =
  "jobs that share a target table must use the same write mode and merge key, or the runs of one undo the other's " +
  '(docs/loaded-tables.md "Target names"); give one of them its own table';

beforeAll(async () => {
  h = await startHarness();
  dir = await mkdtemp(join(tmpdir(), 'report-etl-target-names-'));
});
afterAll(async () => {
  await deleteRuns(h.pool, jp);
  await deleteKeys(h.redis, prefix);
  await h?.close();
});

/** Writes a jobs.yaml with connection `sim` and the given jobs (YAML text, indented by 2) and returns its path. */
async function config(name: string, jobs: string): Promise<string> {
  const path = join(dir, `${name}.yaml`);
  await writeFile(
    path,
    `connections:\n  sim: { baseUrl: "\${SIM_URL}", clientId: demo-client, clientSecret: "\${SIM_SECRET}", ` +
      `timezone: Europe/Zurich, pollIntervalMs: 20 }\njobs:\n${jobs}`,
  );
  return path;
}

function cli(args: string[], env: Record<string, string> = {}): Promise<CliExit> {
  return runCli(args, {
    env: { SIM_URL: h.sim.url, SIM_SECRET: 'demo-secret', REPORT_ETL_QUEUE_PREFIX: prefix, LOG_FORMAT: 'json', ...env },
  });
}

/** A Stock/Levels job (report columns Artikel, Lager, Bestand, Stand) into `table`, with the given target lines. */
const stockJob = (job: string, table: string, ...target: string[]) =>
  `  ${job}:\n    connection: sim\n    report: { mandant: 7777, name: Stock/Levels, outputType: ` +
  `txt }\n    target:\n      table: ${table}\n${target.map((l) => `      ${l}\n`).join('')}`;

const tableExists = async (table: string) =>
  (await h.pool.query('SELECT to_regclass($1) AS t', [table])).rows[0].t !== null;

describe('a declared column the report does not have (bestnd for bestand)', () => {
  it(
    'is refused by the first run and by preview before anything is loaded, naming job, option, ' +
      "name and the report's columns",
    async () => {
      const job = `${jp}_typo`;
      const table = `${h.schema}.stock_typo`;
      const path = await config('typo', stockJob(job, table, 'columns: { bestnd: numeric }'));
      // Nothing in the file alone says it is wrong, and the target does not exist yet.
      const v = await cli(['validate', '--config', path]);
      expect(v.stderr).toBe('');
      expect(v.code).toBe(0);

      const created = h.sim.counters().jobsCreated;
      const preview = await cli(['preview', job, '--config', path]);
      expect(preview.code).toBe(1);
      expect(preview.stderr).toContain(
        `${job}: preview failed (TARGET_INVALID): job ${job}: target.columns.bestnd: ` +
          `the report has no column bestnd (did you mean "bestand"?)`,
      );
      expect(preview.stderr).toContain("The report's columns: artikel, lager, bestand, stand.");

      const run = await cli(['run', job, '--config', path]);
      expect(run.code).toBe(1);
      expect(run.stdout).toContain(`${job}: failed (TARGET_INVALID)`);
      expect(run.stdout).toContain(
        `job ${job}: target.columns.bestnd: the report has no column bestnd (did you mean "bestand"?), ` +
          `so its declared type applies to nothing. The report's columns: artikel, lager, bestand, stand.`,
      );
      expect(await tableExists(table)).toBe(false);
      // One attempt, not retried; both report jobs deleted.
      const attempts = await attemptsOf(h.pool, job);
      expect(attempts.map((a) => a.status)).toEqual(['failed']);
      const errors = await h.pool.query<{ error_kind: string; retryable: boolean; stage: string }>(
        'SELECT e.error_kind, e.retryable, e.stage FROM etl.run_errors e JOIN etl.attempts a USING ' +
          '(attempt_id) WHERE a.job = $1',
        [job],
      );
      expect(errors.rows).toEqual([{ error_kind: 'TARGET_INVALID', retryable: false, stage: 'load' }]);
      expect(h.sim.counters().jobsCreated).toBe(created + 2);
      expect(h.sim.counters().openJobs).toEqual([]);
    },
    120_000,
  );

  it(
    'is refused by validate once the target exists, with a did-you-mean from its columns; ' +
      'one that resembles none is a warning',
    async () => {
      const job = `${jp}_exists`;
      const table = `${h.schema}.stock_exists`;
      await h.pool.query(
        `CREATE TABLE ${table} (artikel text PRIMARY KEY, lager text, bestand numeric, stand timestamptz)`,
      );
      const typo = await config(
        'exists',
        stockJob(job, table, 'mode: merge', 'key: [artikl]', 'columns: { bestnd: numeric, lager: text }'),
      );
      const v = await cli(['validate', '--config', typo]);
      expect(v.code).toBe(2);
      expect(v.stdout).toBe('');
      expect(v.stderr.trim().split('\n')).toEqual([
        `${typo}:10:13: error: jobs.${job}.target.key[0]: the target ${table} has no column artikl (did you mean ` +
          `"artikel"?): a merge key must be a column of the target, with a unique index on the key (its columns: ` +
          `artikel, lager, bestand, stand)`,
        `${typo}:11:18: error: jobs.${job}.target.columns.bestnd: the target ${table} has no column bestnd ` +
          '(did you mean ' +
          `"bestand"?): a declared type applies only to a column of that name (its columns: artikel, lager, bestand, ` +
          `stand)`,
        `${typo}: 2 errors`,
      ]);

      // A name like none of the target's columns may be a column the report is about to bring: allowed, with a warning.
      const fresh = await config(
        'exists-new',
        stockJob(job, table, 'mode: merge', 'key: [artikel]', 'columns: { rabatt: numeric }'),
      );
      const w = await cli(['validate', '--config', fresh]);
      expect(w.code).toBe(0);
      expect(w.stderr).toContain(
        `warning: ${fresh}: jobs.${job}.target.columns.rabatt: the target ${table} has no column rabatt yet: ` +
          `its declared type applies only when the report brings a new column rabatt`,
      );
      // ... and the run, whose report has no such column, fails before loading: the table stays as it was.
      await h.pool.query(`INSERT INTO ${table} VALUES ('keep', 'L', 1, now())`);
      const run = await cli(['run', job, '--config', fresh]);
      expect(run.code).toBe(1);
      expect(run.stdout).toContain(
        `job ${job}: target.columns.rabatt: neither the report nor the target ${table} has a column rabatt, ` +
          `so its declared type applies to nothing`,
      );
      expect((await h.pool.query(`SELECT artikel FROM ${table}`)).rows).toEqual([{ artikel: 'keep' }]);
    },
    120_000,
  );

  it('a target that is a view is refused by validate', async () => {
    const table = `${h.schema}.stock_view`;
    await h.pool.query(`CREATE VIEW ${table} AS SELECT 1 AS artikel`);
    const path = await config('view', stockJob(`${jp}_view`, table));
    const v = await cli(['validate', '--config', path]);
    expect(v.code).toBe(2);
    expect(v.stderr).toContain(
      `jobs.${jp}_view.target.table: ${table} exists in PostgreSQL as a view, not a table: ` +
        `report-etl loads into tables only`,
    );
  });
});

describe('a merge into an existing table', () => {
  it(
    'is refused by validate while no primary key or unique index serves its key, ' + 'and passes once one does',
    async () => {
      const table = `${h.schema}.stock_merge_noindex`;
      // As a replace job left it: no key at all.
      await h.pool.query(`CREATE TABLE ${table} (artikel text, lager text, bestand numeric, stand timestamptz)`);
      const path = await config(
        'merge-noindex',
        stockJob(`${jp}_mnoix`, table, 'mode: merge', 'key: [artikel, lager]'),
      );
      const v = await cli(['validate', '--config', path]);
      expect(v.code).toBe(2);
      expect(v.stderr).toContain(
        `jobs.${jp}_mnoix.target.key: the target ${table} has no primary key or unique index on (artikel, lager): ` +
          `a merge finds the rows it updates by one, so every run would fail; add it: ` +
          `CREATE UNIQUE INDEX ON ${table} (artikel, lager)`,
      );
      // An index on part of the key, a partial one, or one on an expression does not serve it either.
      await h.pool.query(
        `CREATE UNIQUE INDEX ON ${table} (artikel); CREATE UNIQUE INDEX ON ${table} (artikel, lager) ` +
          `WHERE bestand > 0; CREATE UNIQUE INDEX ON ${table} (lower(artikel), lager)`,
      );
      expect((await cli(['validate', '--config', path])).code).toBe(2);
      // One on the key's columns in another order does.
      await h.pool.query(`CREATE UNIQUE INDEX ON ${table} (lager, artikel)`);
      const ok = await cli(['validate', '--config', path]);
      expect({ code: ok.code, stderr: ok.stderr }).toEqual({ code: 0, stderr: '' });
    },
  );
});

describe('a key or column name that is not a normalised column name', () => {
  it('is refused by validate with the normalised name, and the job does not run', async () => {
    const job = `${jp}_raw`;
    const path = await config(
      'raw',
      stockJob(
        job,
        `${h.schema}.stock_raw`,
        'mode: merge',
        'key: [Artikel Nr]',
        'columns: { "Größe (cm)": numeric, "%": text, xmin: bigint }',
      ),
    );
    const v = await cli(['validate', '--config', path]);
    expect(v.code).toBe(2);
    expect(v.stderr.trim().split('\n')).toEqual([
      `${path}:10:13: error: jobs.${job}.target.key[0]: "Artikel Nr" is not a normalised column name: did you mean ` +
        `"artikel_nr"? ${RULES}`,
      `${path}:11:18: error: jobs.${job}.target.columns["Größe (cm)"]: "Größe (cm)" is not a normalised column name: ` +
        `did you mean "groesse_cm"? ${RULES}`,
      `${path}:11:41: error: jobs.${job}.target.columns["%"]: "%" is not a column name: it has no letter or digit; ` +
        'write ' +
        'the normalised name of a report column (docs/loaded-tables.md "Column names")',
      `${path}:11:52: error: jobs.${job}.target.columns.xmin: "xmin" is the name of a PostgreSQL system column: ` +
        'a report ' +
        'column of that name loads as "xmin_" (docs/loaded-tables.md "Column names")',
      `${path}: 4 errors`,
    ]);
    const created = h.sim.counters().jobsCreated;
    const run = await cli(['run', job, '--config', path]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('"Artikel Nr" is not a normalised column name: did you mean "artikel_nr"?');
    expect(h.sim.counters().jobsCreated).toBe(created);
  }, 120_000);

  it('a normalised merge key the report lacks fails preview and the first run with a did-you-mean', async () => {
    const job = `${jp}_key`;
    const table = `${h.schema}.stock_key`;
    const path = await config('key', stockJob(job, table, 'mode: merge', 'key: [artikel_nr]'));
    expect((await cli(['validate', '--config', path])).code).toBe(0);
    const preview = await cli(['preview', job, '--config', path]);
    expect(preview.stderr).toContain(
      `target.key: merge key column artikel_nr is not a column of the report (did you mean "artikel"?)`,
    );
    const run = await cli(['run', job, '--config', path]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(`${job}: failed (TARGET_INVALID)`);
    expect(run.stdout).toContain(
      `job ${job}: target.key: merge key column artikel_nr is not a column of the report (did you mean ` +
        `"artikel"?). The report's columns: artikel, lager, bestand, stand.`,
    );
    expect(await tableExists(table)).toBe(false);
  }, 120_000);
});

describe('names longer than PostgreSQL keeps (63 bytes)', () => {
  it('are refused for schema, table, key and columns, naming the byte count and the limit', async () => {
    const long = `stock_${'x'.repeat(57)}`; // 63 bytes: allowed
    const path = await config(
      'long',
      // Two names that differ only in their 64th byte: PostgreSQL would load both into one table.
      stockJob(`${jp}_long_a`, `${h.schema}.${long}a`) +
        stockJob(`${jp}_long_b`, `${h.schema}.${long}b`) +
        stockJob(`${jp}_long_ok`, `${h.schema}.${long}`) +
        stockJob(
          `${jp}_long_s`,
          `s${'c'.repeat(63)}.stock`,
          'mode: merge',
          `key: [${'k'.repeat(64)}]`,
          `columns: { ${'c'.repeat(70)}: text }`,
        ),
    );
    const v = await cli(['validate', '--config', path]);
    expect(v.code).toBe(2);
    const lines = v.stderr.trim().split('\n');
    expect(
      lines.filter((l) =>
        l.includes(
          "is 64 bytes, longer than PostgreSQL's limit of 63 bytes for a name: PostgreSQL would cut it, " +
            'so two long names could load into one table',
        ),
      ),
    ).toHaveLength(3);
    expect(lines.find((l) => l.includes(`jobs.${jp}_long_a.target.table:`))).toContain(
      `table name "${long}a" is 64 bytes`,
    );
    expect(lines.find((l) => l.includes(`jobs.${jp}_long_s.target.table:`))).toContain(
      `schema name "s${'c'.repeat(63)}" is 64 bytes`,
    );
    expect(lines.find((l) => l.includes(`jobs.${jp}_long_s.target.key[0]:`))).toContain(
      `"${'k'.repeat(64)}" is 64 bytes, longer than PostgreSQL's limit of 63 bytes for a name: ` +
        `a report column with a longer name is loaded as its first 54 characters and a short hash`,
    );
    expect(lines.find((l) => l.includes(`jobs.${jp}_long_s.target.columns.${'c'.repeat(70)}:`))).toContain(
      "is 70 bytes, longer than PostgreSQL's limit of 63 bytes",
    );
    expect(lines.some((l) => l.includes(`${jp}_long_ok`))).toBe(false);
    expect(lines.at(-1)).toBe(`${path}: 5 errors`);
  });
});

describe('two jobs writing one target table', () => {
  it(
    'with different write modes or keys: a config error naming both; ' + 'validate exits 2, the other jobs still run',
    async () => {
      const table = `${h.schema}.stock_shared`;
      const path = await config(
        'shared',
        stockJob(`${jp}_sh_replace`, table) +
          // Same table: the schema is written out here, defaulted there, and merge by another key.
          stockJob(`${jp}_sh_merge`, table, 'mode: merge', 'key: [artikel, lager]') +
          stockJob(`${jp}_sh_public_a`, 'stock_public_shared', 'mode: append') +
          stockJob(`${jp}_sh_public_b`, 'public.stock_public_shared', 'mode: replace') +
          stockJob(`${jp}_sh_alone`, `${h.schema}.stock_alone`),
      );
      const v = await cli(['validate', '--config', path]);
      expect(v.code).toBe(2);
      const lines = v.stderr.trim().split('\n');
      expect(lines).toContain(
        `${path}:8:14: error: jobs.${jp}_sh_replace.target.table: ${table} is also the target of job ` +
          `"${jp}_sh_merge" ` +
          `(mode merge, key [artikel, lager]), but this job writes it with mode replace: ${SHARED}`,
      );
      expect(lines).toContain(
        `${path}:13:14: error: jobs.${jp}_sh_merge.target.table: ${table} is also the target of job ` +
          `"${jp}_sh_replace" ` +
          `(mode replace), but this job writes it with mode merge, key [artikel, lager]: ${SHARED}`,
      );
      expect(lines.filter((l) => l.includes('public.stock_public_shared is also the target of job'))).toHaveLength(2);
      expect(lines.at(-1)).toBe(`${path}: 4 errors`);

      // A running installation skips the four (which of two is meant cannot be told) and runs the others.
      const alone = await cli(['run', `${jp}_sh_alone`, '--config', path]);
      expect(alone.code).toBe(0);
      expect(
        alone.stderr.split('\n').filter((l) => l.startsWith('warning: ') && l.includes('is skipped')),
      ).toHaveLength(4);
      const skipped = await cli(['run', `${jp}_sh_merge`, '--config', path]);
      expect(skipped.code).toBe(2);
      expect(skipped.stderr).toContain(`is also the target of job "${jp}_sh_replace" (mode replace)`);
      expect(await attemptsOf(h.pool, `${jp}_sh_merge`)).toEqual([]);
    },
    120_000,
  );

  it('with the same write mode and key: allowed, with a warning naming both (exit 0)', async () => {
    const table = `${h.schema}.stock_same`;
    const path = await config(
      'same',
      stockJob(`${jp}_same_a`, table, 'mode: merge', 'key: [artikel, lager]') +
        stockJob(`${jp}_same_b`, table, 'mode: merge', 'key: [lager, artikel]'),
    );
    const v = await cli(['validate', '--config', path]);
    expect(v.code).toBe(0);
    expect(v.stderr.trim()).toBe(
      `warning: ${path}: jobs.${jp}_same_a.target.table: ${table} is the target of jobs "${jp}_same_a" and ` +
        `"${jp}_same_b", both with mode merge, key [artikel, lager]: allowed, but their rows with the same key ` +
        `[artikel, lager] overwrite each other, and the table gets the columns of every one of their reports; ` +
        `give each job its own table unless that is meant`,
    );
  });
});

describe('validate without a PostgreSQL to read', () => {
  it("says the targets were not checked, and exits by the file's own problems", async () => {
    const table = `${h.schema}.stock_offline`;
    await h.pool.query(`CREATE TABLE ${table} (artikel text, lager text, bestand numeric, stand timestamptz)`);
    const path = await config('offline', stockJob(`${jp}_offline`, table, 'columns: { bestnd: numeric }'));
    const nowhere = { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' };
    const ok = await cli(['validate', '--config', path], nowhere);
    expect(ok.code).toBe(0);
    expect(ok.stdout.split('\n')[0]).toBe(`${path}: ok, 1 job (${jp}_offline) on 1 connection`);
    expect(ok.stderr.trim()).toMatch(
      new RegExp(
        /^warning: targets were not checked against the database \(PostgreSQL at /.source +
          /127\.0\.0\.1:1\/nowhere \(DATABASE_URL\): ECONNREFUSED .*\); the file was checked alone/.source,
      ),
    );

    const bad = await config('offline-bad', stockJob(`${jp}_offline`, table, 'columns: { Bestand: numeric }'));
    const refused = await cli(['validate', '--config', bad], nowhere);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('warning: targets were not checked against the database');
    expect(refused.stderr).toContain('"Bestand" is not a normalised column name: did you mean "bestand"?');

    // --no-database checks the file alone, without a word about the database.
    const alone = await cli(['validate', '--no-database', '--config', path], nowhere);
    expect(alone.code).toBe(0);
    expect(alone.stderr).toBe('');
    // With PostgreSQL there, the same file is refused.
    expect((await cli(['validate', '--config', path])).stderr).toContain(
      `jobs.${jp}_offline.target.columns.bestnd: the target ${table} has no column bestnd (did you mean "bestand"?)`,
    );
  }, 120_000);
});
