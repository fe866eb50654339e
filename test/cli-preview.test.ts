/**
 * `report-etl preview` as a user runs it: the columns with their types and where each type comes from,
 * the first rows as PostgreSQL would store them, a warning for a value that would not fit; nothing loaded, no run
 * recorded, the report job deleted.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runCli, type CliExit } from './support/cli.ts';
import { uniqueName } from './support/env.ts';
import { startHarness, type Harness } from './support/harness.ts';

let h: Harness;
let configPath: string;
const job = uniqueName('preview');
beforeAll(async () => {
  h = await startHarness();
  configPath = join(await mkdtemp(join(tmpdir(), 'report-etl-preview-')), 'jobs.yaml');
  await writeFile(
    configPath,
    `connections:
  sim: { baseUrl: "\${SIM_URL}", clientId: demo-client, clientSecret: "\${SIM_SECRET}", timezone: Europe/Zurich,
    pollIntervalMs: 20 }
jobs:
  ${job}:
    connection: sim
    report: { mandant: 7777, name: Sales/Orders, outputType: txt, parameters: { ROWS: "800" } }
    target: { table: ${h.schema}.orders_preview, columns: { kunde: bigint } }
  ${job}_range:
    connection: sim
    report:
      mandant: 7777
      name: Finance/Bookings
      outputType: json
      parameters: { FROM: "%{logicalEnd-8d:yyyy-MM-dd}", TO: "%{logicalEnd:yyyy-MM-dd}" }
    target:
      table: ${h.schema}.bookings_preview
      columns: { buchungstag: date }
      replaceRange: { column: buchungstag, from: "%{logicalEnd-7d:yyyy-MM-dd}", to: "%{logicalEnd:yyyy-MM-dd}" }
  ${job}_mandants:
    connection: sim
    report:
      mandant: [7001, 7002]
      name: Finance/Bookings
      parameters: { FROM: "%{logicalEnd-7d:yyyy-MM-dd}", TO: "%{logicalEnd:yyyy-MM-dd}" }
    target:
      table: ${h.schema}.bookings_mandants
      columns: { buchungstag: date }
      replaceRange: { column: buchungstag, from: "%{logicalEnd-7d:yyyy-MM-dd}", to: "%{logicalEnd:yyyy-MM-dd}" }
  ${job}_key:
    connection: sim
    report: { mandant: 7777, name: Sales/Orders, outputType: json, parameters: { ROWS: "many" } }
    target: { table: ${h.schema}.orders_key, mode: merge, key: [auftrag_nummer] }
  ${job}_pdf:
    connection: sim
    report: { mandant: 7777, name: Sales/Orders, outputType: pdf, paging: 100, parameters: { ROWS: "250" } }
    target: { table: ${h.schema}.orders_pdf }
`,
  );
});
afterAll(async () => {
  await h?.close();
});

function cli(args: string[]): Promise<CliExit> {
  return runCli(args, { env: { SIM_URL: h.sim.url, SIM_SECRET: 'demo-secret', LOG_FORMAT: 'json' } });
}

it('shows columns, types and the first rows, loads nothing, records no run and deletes the report job', async () => {
  const created = h.sim.counters().jobsCreated;
  const r = await cli(['preview', job, '--config', configPath, '--rows', '4']);
  expect(r.code).toBe(0);
  const out = r.stdout.split('\n');
  expect(out[0]).toBe(`${job}: first 4 of 800 rows, into ${h.schema}.orders_preview — nothing was loaded`);
  expect(r.stdout).toMatch(/^auftrag_nr +bigint +inferred +Auftrag Nr$/m);
  expect(r.stdout).toMatch(/^kunde +bigint +declared +Kunde$/m);
  expect(r.stdout).toMatch(/^erfasst_am +timestamptz +inferred +Erfasst Am$/m);
  // Header line of the rows, then exactly 4 rows starting with the first order numbers.
  const header = out.findIndex((l) => /^auftrag_nr +kunde +menge_stk/.test(l));
  expect(out.slice(header + 1, header + 5).map((l) => l.split(/ +/)[0])).toEqual([
    '100000',
    '100001',
    '100002',
    '100003',
  ]);
  // Kunde is text, declared bigint: every shown row would fail a load, and the preview says so.
  expect(r.stderr).toMatch(/warning: row 1, column kunde: ".*" does not fit bigint: a load of this row would fail/);
  // Nothing says a page was loaded when nothing was.
  expect(r.stderr).not.toContain('page loaded');
  expect(h.sim.counters().jobsCreated).toBe(created + 1);
  expect(h.sim.counters().openJobs).toEqual([]);
  const runs = await h.pool.query('SELECT count(*)::int AS n FROM etl.attempts WHERE job = $1', [job]);
  expect(runs.rows[0].n).toBe(0);
  const table = await h.pool.query('SELECT to_regclass($1) AS t', [`${h.schema}.orders_preview`]);
  expect(table.rows[0].t).toBeNull();
});

it('refuses --rows 0 (exit 2) and names an unknown job (exit 2)', async () => {
  expect((await cli(['preview', job, '--config', configPath, '--rows', '0'])).code).toBe(2);
  const unknown = await cli(['preview', 'nope', '--config', configPath]);
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toMatch(/unknown job "nope"/);
});

it('shows a document by its file name, content type and size', async () => {
  const r = await cli(['preview', `${job}_pdf`, '--config', configPath]);
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(/^content +bytea +fixed +content$/m);
  expect(r.stdout).toMatch(/^1 +Orders_7777_\d{8}T\d{9}Z_1\.pdf +application\/pdf +(\d+) bytes +\1 +[0-9a-f]{39}…$/m);
  expect(h.sim.counters().openJobs).toEqual([]);
  const table = await h.pool.query('SELECT to_regclass($1) AS t', [`${h.schema}.orders_pdf`]);
  expect(table.rows[0].t).toBeNull();
});

it('with replaceRange: names the period, the rows it holds now, and warns of shown rows outside it', async () => {
  const table = `${h.schema}.bookings_preview`;
  await h.pool.query(`CREATE TABLE ${table} (buchung_nr text, buchungstag date, betrag numeric, text text)`);
  await h.pool.query(
    `INSERT INTO ${table} VALUES ('a', '2026-01-13', 1, 'in'), ('b', '2026-01-19', 1, 'in'), ` +
      `('c', '2026-01-12', 1, 'out')`,
  );
  const r = await cli([
    'preview',
    `${job}_range`,
    '--config',
    configPath,
    '--rows',
    '50',
    '--logical-time',
    '2026-01-20',
  ]);
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(
    new RegExp(
      `a load replaces the period buchungstag in \\[2026-01-13, 2026-01-20\\) of ${table} \\(it holds 2\\) with ` +
        "the report's \\d+ rows, in one transaction; rows outside the period stay",
    ),
  );
  // The report reads 8 days, the period is 7: the first day's rows would fail a load.
  expect(r.stderr).toMatch(
    /warning: row 1, column buchungstag: "2026-01-12" lies outside the period: a load would fail with RANGE_VIOLATION/,
  );
  expect(r.stderr).not.toMatch(/"2026-01-13" lies outside/);
  expect((await h.pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n).toBe(3);
});

it('with many mandants: shows the mandant column a load adds to a new table', async () => {
  const table = `${h.schema}.bookings_mandants`;
  const args = ['preview', `${job}_mandants`, '--config', configPath, '--rows', '1', '--logical-time', '2026-01-20'];
  const r = await cli([...args, '--mandant', '7002']);
  expect(r.code, r.stderr).toBe(0);
  // A first load creates the table with the report's columns and the mandant column (docs/loaded-tables.md).
  expect(r.stdout).toMatch(/^mandant +integer +mandant +\(7002 for this run's rows\)$/m);
  expect(r.stdout).toContain(
    `a load replaces the period buchungstag in [2026-01-13, 2026-01-20) of mandant 7002 (mandant = 7002) of ` +
      `${table} (the table does not exist yet) with the report's `,
  );
  expect(r.stdout).toContain("rows outside the period and the other mandants' rows stay");
  expect((await h.pool.query('SELECT to_regclass($1) AS t', [table])).rows[0].t).toBeNull();
});

it('a name the report lacks, or a parameter the server refuses: says where to fix it, not to run preview', async () => {
  const wrongKey = await cli(['preview', `${job}_key`, '--config', configPath, '-p', 'ROWS=5']);
  expect(wrongKey.code).toBe(1);
  expect(wrongKey.stderr).toContain(
    'target.key: merge key column auftrag_nummer is not a column of the report (did you mean "auftrag_nr"?). ' +
      "The report's columns: auftrag_nr, kunde,",
  );
  expect(wrongKey.stderr).toContain('or remove the entry, then preview again');
  expect(wrongKey.stderr).not.toContain('`report-etl preview` shows');
  // The line and column of the key in jobs.yaml.
  expect(wrongKey.stderr).toMatch(new RegExp(`\\n  fix ${configPath}:\\d+:\\d+: target\\.key: auftrag_nummer\\n`));
  const refused = await cli(['preview', `${job}_key`, '--config', configPath]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("Invalid value for parameter ROWS: 'many'");
  expect(refused.stderr).toMatch(
    new RegExp(`\\n  parameter ROWS: ${configPath}:\\d+:\\d+ \\(report\\.parameters\\.ROWS\\)\\n`),
  );
  const given = await cli(['preview', `${job}_key`, '--config', configPath, '-p', 'ROWS=x']);
  expect(given.stderr).toContain('\n  parameter ROWS: given with -p ROWS=x\n');
});
