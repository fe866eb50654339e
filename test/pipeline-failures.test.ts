/**
 * Failed runs: each is recorded with the server's own words, leaves the target exactly as it was, and deletes
 * the report job (docs/report-export-service.md "Errors"; docs/observability.md "Run history").
 */
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { silentLogger } from '../src/logger.ts';
import { FAILING_MESSAGE } from '../src/simulator/catalogue.ts';
import { attemptFailure, type Harness, jobEntry, startHarness } from './support/harness.ts';
import { waitFor } from './support/wait.ts';

let h: Harness;
let table: string;
beforeAll(async () => {
  h = await startHarness();
  table = `${h.schema}.orders`;
  await h.pool.query(
    `CREATE TABLE ${table} (auftrag_nr bigint, kunde text, menge_stk bigint, betrag numeric, rabatt numeric, ` +
      `erfasst_am timestamptz, bemerkung text, beleg_id bigint)`,
  );
  await h.pool.query(`INSERT INTO ${table} (auftrag_nr, kunde) VALUES (1, 'old row'), (2, 'old row')`);
});
afterAll(async () => {
  await h?.close();
});

/** A fingerprint of the target's full content. */
async function snapshot(): Promise<string> {
  const { rows } = await h.pool.query(
    `SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS m, count(*)::int AS n FROM ${table} t`,
  );
  return `${rows[0].n}:${rows[0].m}`;
}

/** Runs a job expected to fail; returns the error and the recorded run and run_errors rows. */
async function failingRun(
  report: Record<string, unknown>,
  connection: Record<string, unknown> = {},
  targetExtra: Record<string, unknown> = {},
) {
  const before = await snapshot();
  const config = h.config(
    {
      j: jobEntry(
        { name: 'Sales/Orders', outputType: 'json', paging: 100, parameters: { ROWS: '450' }, ...report },
        { table, ...targetExtra },
      ),
    },
    connection,
  );
  const failed = await attemptFailure(h.run(config, 'j'));
  const run = (await h.pool.query('SELECT * FROM etl.attempts WHERE attempt_id = $1', [failed.attemptId])).rows[0];
  const errors = (await h.pool.query('SELECT * FROM etl.run_errors WHERE attempt_id = $1', [failed.attemptId])).rows;
  expect(await snapshot()).toBe(before);
  expect(h.sim.counters().openJobs).toEqual([]);
  expect(errors).toHaveLength(1);
  return { err: failed, run, error: errors[0] };
}

it('a report that ends FinishedError is recorded with the server text verbatim', async () => {
  const { err, run, error } = await failingRun({ name: 'Failing' });
  expect(err.code).toBe('REPORT_FAILED');
  expect(err.retryable).toBe(false);
  expect(run.status).toBe('failed');
  expect(run.report_job_id).toMatch(/^[0-9a-f-]{36}$/);
  expect(error).toMatchObject({
    stage: 'poll',
    error_kind: 'REPORT_FAILED',
    server_message: FAILING_MESSAGE,
    retryable: false,
  });
  expect(run.error).toContain(FAILING_MESSAGE);
});

it('a rights failure (HTTP 200 FinishedError, result []) is recorded with the server text', async () => {
  const { err, error } = await failingRun({}, { clientId: 'no-rights-client', clientSecret: 'no-rights-secret' });
  expect(err.code).toBe('RIGHTS_FAILURE');
  expect(error.stage).toBe('start');
  expect(error.server_message).toMatch(/\S/);
  expect(error.server_message).toBe((err.error as { serverMessage?: string }).serverMessage);
});

it('a 403 is recorded with the SvcServletExceptionMessage text and the problem details', async () => {
  const { err, error } = await failingRun({}, { clientId: 'no-access-client', clientSecret: 'no-access-secret' });
  expect(err.code).toBe('ACCESS_FORBIDDEN');
  expect(error).toMatchObject({ http_status: 403, error_kind: 'ACCESS_FORBIDDEN', retryable: false });
  expect(error.server_message).toMatch(/\S/);
  expect(error.problem).toMatchObject({ status: 403, type: expect.stringContaining('user-service-access-forbidden') });
});

it(
  'a server that cannot be reached is recorded as SERVER_UNREACHABLE (retryable) ' +
    'with what to check, not as TOKEN_FAILED',
  async () => {
    const free = createServer();
    await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
    const baseUrl = `http://127.0.0.1:${(free.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => free.close(() => resolve()));
    const { err, run, error } = await failingRun({}, { baseUrl });
    expect(err.code).toBe('SERVER_UNREACHABLE');
    expect(err.retryable).toBe(true);
    expect(error).toMatchObject({
      stage: 'token',
      error_kind: 'SERVER_UNREACHABLE',
      retryable: true,
      details: { networkCode: 'ECONNREFUSED', server: baseUrl },
    });
    expect(error.message).toContain(`the server ${baseUrl} cannot be reached (connection refused, ECONNREFUSED)`);
    expect(error.message).toContain('check that baseUrl in jobs.yaml is right, that the server is up');
    expect(run.error).not.toMatch(/credential|secret/i);
  },
);

it('a row-count mismatch fails the run and commits nothing', async () => {
  h.sim.setFaults({ misreportRows: 1 });
  try {
    const { err, error } = await failingRun({});
    expect(err.code).toBe('ROW_COUNT_MISMATCH');
    expect(error.details).toMatchObject({ expected: 451, loaded: 450 });
  } finally {
    h.sim.setFaults({});
  }
});

it('a value that does not fit the existing column type names column, page and value', async () => {
  await h.pool.query(`ALTER TABLE ${table} ALTER COLUMN betrag TYPE bigint`);
  try {
    const { err, error } = await failingRun({ outputType: 'txt' });
    expect(err.code).toBe('VALUE_DOES_NOT_FIT');
    expect(error.details.column).toBe('betrag');
    expect(error.details.page).toBeGreaterThanOrEqual(1);
    expect(err.message).toMatch(/betrag/);
    expect(err.message).toMatch(/page \d+/);
    expect(err.message).toContain(`"${error.details.value}"`);
  } finally {
    await h.pool.query(`ALTER TABLE ${table} ALTER COLUMN betrag TYPE numeric`);
  }
});

it('a declared type that the values do not fit fails the first run with column, page and value', async () => {
  const fresh = `${h.schema}.declared_bad`;
  const config = h.config({
    d: jobEntry(
      { name: 'Drift', outputType: 'json', paging: 50, parameters: { ROWS: '200' } },
      { table: fresh, columns: { wert: 'bigint' } },
    ),
  });
  const err = await attemptFailure(h.run(config, 'd'));
  expect(err.code).toBe('VALUE_DOES_NOT_FIT');
  expect(err.message).toMatch(/column wert .*page 3/);
  const exists = await h.pool.query(`SELECT to_regclass($1) AS t`, [fresh]);
  expect(exists.rows[0].t).toBeNull();
});

it('an aborted run rolls back, deletes its report job and is recorded interrupted', async () => {
  const before = await snapshot();
  h.sim.setFaults({ latencyMs: 100 });
  const controller = new AbortController();
  const config = h.config({
    j: jobEntry({ name: 'Sales/Orders', outputType: 'json', paging: 100, parameters: { ROWS: '2000' } }, { table }),
  });
  const logger = silentLogger;
  const pending = h.run(config, 'j', {}, { logger, signal: controller.signal });
  // Abort once a few pages are in the COPY stream.
  await waitFor('three pages asked for', () => h.sim.counters().requests.output >= 3);
  controller.abort(new Error('test abort'));
  const err = await attemptFailure(pending);
  h.sim.setFaults({});
  expect(err.code).toBe('ABORTED');
  const run = (await h.pool.query('SELECT status FROM etl.attempts WHERE attempt_id = $1', [err.attemptId])).rows[0];
  expect(run.status).toBe('interrupted');
  expect(await snapshot()).toBe(before);
  expect(h.sim.counters().openJobs).toEqual([]);
});

it('a declared varchar too short for the values fails the first load instead of cutting them short', async () => {
  const fresh = `${h.schema}.short_text`;
  const config = h.config({
    s: jobEntry({ name: 'Stock/Levels', outputType: 'json' }, { table: fresh, columns: { artikel: 'varchar(3)' } }),
  });
  const err = await attemptFailure(h.run(config, 's'));
  expect(err.code).toBe('VALUE_DOES_NOT_FIT');
  expect(err.message).toMatch(/column artikel .*type character varying\(3\).*page 1, row 1 /);
  const exists = await h.pool.query(`SELECT to_regclass($1) AS t`, [fresh]);
  expect(exists.rows[0].t).toBeNull();
});

it('names the column whose value does not fit, not one whose modifier merely rounds', async () => {
  const target = `${h.schema}.stock_modifiers`;
  // numeric(10,2) takes Bestand's integers (it rounds what it must); varchar(5) is too short for Stand.
  await h.pool.query(`CREATE TABLE ${target} (artikel text PRIMARY KEY, bestand numeric(10,2), stand varchar(5))`);
  const config = h.config({ s: jobEntry({ name: 'Stock/Levels', outputType: 'json' }, { table: target }) });
  const err = await attemptFailure(h.run(config, 's'));
  expect(err.code).toBe('VALUE_DOES_NOT_FIT');
  expect(err.message).toMatch(/does not fit column stand .*character varying\(5\).*page 1, row 1 /);
  const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM ${target}`);
  expect(rows[0].n).toBe(0);
});

it(
  'an attempt declared dead by a later attempt while it stalled does not commit, ' + 'and its record stays interrupted',
  async () => {
    const before = await snapshot();
    h.sim.setFaults({ latencyMs: 60 });
    const config = h.config({
      j: jobEntry({ name: 'Sales/Orders', outputType: 'json', paging: 100, parameters: { ROWS: '600' } }, { table }),
    });
    const pending = h.run(config, 'j');
    try {
      // What recoverDeadAttempts of the next attempt does to an attempt it finds still `running`.
      const marked = await waitFor('the attempt, loading, marked interrupted', async () => {
        if (h.sim.counters().requests.output < 2) return 0;
        const res = await h.pool.query(
          `UPDATE etl.attempts SET status = 'interrupted', error = 'abandoned (test)' WHERE job = 'j' AND status ` +
            `= 'running' AND target_table = $1`,
          [table],
        );
        return res.rowCount;
      });
      expect(marked).toBe(1);
    } finally {
      h.sim.setFaults({});
    }
    const err = await attemptFailure(pending);
    expect(err.code).toBe('ABORTED');
    expect(err.message).toMatch(/declared dead by a later attempt/);
    const run = (await h.pool.query('SELECT status, error FROM etl.attempts WHERE attempt_id = $1', [err.attemptId]))
      .rows[0];
    expect(run).toEqual({ status: 'interrupted', error: 'abandoned (test)' });
    expect(await snapshot()).toBe(before);
    expect(h.sim.counters().openJobs).toEqual([]);
  },
);
