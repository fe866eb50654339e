/**
 * `report-etl run` as a user runs it: a child process with a jobs.yaml file, its exit codes (0 ok, 1 run failed,
 * 2 usage or config error), its one-line summary, and Ctrl-C mid-load leaving the target exactly as it was.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startHarness, type Harness } from './support/harness.ts';
import { BIN, runCli, type CliExit as Exit, simConnectionLines } from './support/cli.ts';
import { DATABASE_URL, REDIS_URL } from './support/env.ts';
import { reportData } from '../src/simulator/catalogue.ts';
import { formatZoned } from '../src/pipeline/logical-time.ts';
import { FAILURE_HINTS } from '../src/failure-hints.ts';

let h: Harness;
let configPath: string;
beforeAll(async () => {
  h = await startHarness();
  const dir = await mkdtemp(join(tmpdir(), 'report-etl-cli-'));
  configPath = join(dir, 'jobs.yaml');
  await writeFile(
    configPath,
    `${simConnectionLines('${SIM_URL}', 'SIM_SECRET', { timezone: 'Europe/Zurich', pollIntervalMs: 20 }).join('\n')}
  orders:
    connection: sim
    report: { mandant: 7777, name: Sales/Orders, outputType: txt, paging: 200, parameters: { ROWS: "1500" } }
    target: { table: ${h.schema}.orders, mode: replace }
  bad_type:
    connection: sim
    report: { mandant: 7777, name: Stock/Levels }
    target: { table: ${h.schema}.bad_type, columns: { bestand: bigintt } }
  broken:
    connection: sim
    report: { mandant: 7777, name: Failing }
    target: { table: ${h.schema}.broken }
  one_row:
    connection: sim
    report: { mandant: 7777, name: Stock/Levels, parameters: { ROWS: "1" } }
    target: { table: ${h.schema}.one_row }
  templated:
    connection: sim
    report: { mandant: 7777, name: Sales/Orders, paging: 500, parameters: { ROWS: "400",
      FROM: "%{logicalEnd:yyyy-MM-dd}" } }
    target: { table: ${h.schema}.templated }
`,
  );
});
afterAll(async () => {
  await h?.close();
});

/** Runs the CLI; `onStderr` may act on the child while it runs (e.g. send SIGINT). */
function cli(args: string[], onStderr?: (text: string, child: ChildProcess) => void): Promise<Exit> {
  return runCli(args, {
    env: { SIM_URL: h.sim.url, SIM_SECRET: 'demo-secret', LOG_LEVEL: 'info' },
    ...(onStderr ? { onStderr } : {}),
  });
}

it('loads no BullMQ for a run by hand of a jobs.yaml without alert targets', async () => {
  const watch = fileURLToPath(new URL('./fixtures/packages-loaded.mjs', import.meta.url));
  const r = await runCli(['run', 'orders', '--config', configPath], {
    env: { SIM_URL: h.sim.url, SIM_SECRET: 'demo-secret', LOG_LEVEL: 'warn', NODE_OPTIONS: `--import=${watch}` },
  });
  expect(r.code, r.stderr).toBe(0);
  const loaded = JSON.parse(/packages loaded: (.*)\n/.exec(r.stderr)![1]!) as string[];
  expect(loaded).toContain('pg');
  expect(loaded).not.toContain('bullmq');
});

async function tableState(): Promise<string> {
  const { rows } = await h.pool.query(
    `SELECT count(*)::int AS n, md5(string_agg(t::text, '|' ORDER BY t::text)) AS m FROM ${h.schema}.orders t`,
  );
  return `${rows[0].n}:${rows[0].m}`;
}

it('runs a job, prints a one-line summary and exits 0', async () => {
  const r = await cli(['run', 'orders', '--config', configPath]);
  expect(r.stderr).not.toContain('demo-secret');
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toMatch(
    /^orders: succeeded, 1500 rows, 8 pages, [\d.]+ MB in [\d.]+ s \(\d+ rows\/s\), run [0-9a-f-]{36}\n$/,
  );
  expect(r.stderr).toContain('"msg":"page loaded"');
  const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM ${h.schema}.orders`);
  expect(rows[0].n).toBe(1500);
});

it('exits 1 on a failed run, with the server text', async () => {
  const r = await cli(['run', 'broken', '--config', configPath]);
  expect(r.code).toBe(1);
  expect(r.stdout).toContain('broken: failed (REPORT_FAILED)');
  expect(r.stdout).toContain('Division by zero');
  // What to do, as the run's admin page says it: docs/troubleshooting.md's row for the code.
  expect(r.stderr).toContain(
    `broken: what to do: ${FAILURE_HINTS.REPORT_FAILED.todo} (docs/troubleshooting.md, REPORT_FAILED)`,
  );
});

it('says 1 row, not 1 rows, in the progress lines and the summary', async () => {
  const r = await cli(['run', 'one_row', '--config', configPath, '--log-format', 'pretty']);
  expect(r.code, r.stderr).toBe(0);
  expect(r.stderr).toMatch(/ one_row: report job [0-9a-f-]{36} finished on the server: 1 row in 1 page$/m);
  expect(r.stderr).toMatch(
    / one_row: page 1: 1 row, [\d.]+ kB, [\d,]+ rows\/s — 1 row, [\d.]+ MB in [\d.]+ s so far$/m,
  );
  expect(r.stderr).toMatch(/ one_row: run succeeded: 1 row, 1 page, /m);
  expect(r.stdout).toMatch(/^one_row: succeeded, 1 row, 1 page, /);
});

it('exits 2 on an unknown job and on a config error', async () => {
  const unknown = await cli(['run', 'nope', '--config', configPath]);
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toMatch(/unknown job "nope"/);
  const missing = await cli(['run', 'orders', '--config', join(tmpdir(), 'does-not-exist.yaml')]);
  expect(missing.code).toBe(2);
  const usage = await cli(['run']);
  expect(usage.code).toBe(2);
  // A declared type PostgreSQL does not know is a config error too, though only the database can tell.
  const badType = await cli(['run', 'bad_type', '--config', configPath]);
  expect(badType.code).toBe(2);
  expect(badType.stdout).toContain('target.columns.bestand: "bigintt" is not a PostgreSQL type');
});

it('Ctrl-C mid-load rolls back, deletes the report job and records the run interrupted', async () => {
  const before = await tableState();
  h.sim.setFaults({ latencyMs: 150 });
  let sent = false;
  const r = await cli(['run', 'orders', '--config', configPath], (text, child) => {
    if (!sent && (text.match(/"msg":"page loaded"/g) ?? []).length >= 2) {
      sent = true;
      child.kill('SIGINT');
    }
  });
  h.sim.setFaults({});
  expect(sent).toBe(true);
  expect(r.code).toBe(1);
  expect(r.stdout).toMatch(/orders: failed \(ABORTED/);
  expect(await tableState()).toBe(before);
  expect(h.sim.counters().openJobs).toEqual([]);
  const { rows } = await h.pool.query(
    `SELECT status FROM etl.attempts WHERE job = 'orders' AND target_table = $1 ORDER BY started_at DESC LIMIT 1`,
    [`${h.schema}.orders`],
  );
  expect(rows[0].status).toBe('interrupted');
});

it('renders the logical time in report parameters for a run in the foreground too', async () => {
  // The server refuses a FROM that is not yyyy-mm-dd, so an unrendered "%{logicalEnd:…}" fails the run.
  const day = () => formatZoned(new Date(), 'yyyy-MM-dd', 'Europe/Zurich');
  const before = day();
  const r = await cli(['run', 'templated', '--config', configPath]);
  expect(r.stderr).not.toContain('Invalid parameters');
  expect(r.code).toBe(0);
  const expected = new Set(
    [before, day()].map((d) => reportData('Sales/Orders.avw', { ROWS: '400', FROM: d }, 1)!.rowCount),
  );
  const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM ${h.schema}.templated`);
  expect(expected.has(rows[0].n)).toBe(true);
  expect(rows[0].n).toBeGreaterThan(0);
});

it(
  '--logical-time picks the period by hand; the run keeps it and its parameters, ' + 'so a replay asks for the same',
  async () => {
    const r = await cli([
      'run',
      'templated',
      '--config',
      configPath,
      '--logical-time',
      '2026-03-15',
      '-p',
      'ROWS=300',
      '--run-key',
      'march15',
    ]);
    expect(r.code, r.stderr).toBe(0);
    // FROM is the logical time's day in the job's zone: the rows the server has for it.
    const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM ${h.schema}.templated`);
    expect(rows[0].n).toBe(reportData('Sales/Orders.avw', { ROWS: '300', FROM: '2026-03-15' }, 1)!.rowCount);
    const { rows: run } = await h.pool.query(
      `SELECT logical_end, parameters FROM etl.runs WHERE job = 'templated' AND run_key = 'march15'`,
    );
    // Midnight of 15 March in Europe/Zurich (UTC+1).
    expect(run[0].logical_end.toISOString()).toBe('2026-03-14T23:00:00.000Z');
    expect(run[0].parameters).toEqual({ ROWS: '300' });
    const bad = await cli(['run', 'templated', '--config', configPath, '--logical-time', 'yesterday']);
    expect(bad.code).toBe(2);
    expect(bad.stderr + bad.stdout).toContain('not a date: "yesterday"');
  },
);

it('writes a readable progress line per page on a terminal, JSON lines otherwise', async () => {
  const pretty = await cli(['run', 'orders', '--config', configPath, '--log-format', 'pretty']);
  expect(pretty.code).toBe(0);
  expect(pretty.stderr).toMatch(
    /^\d\d:\d\d:\d\d orders: run started: Sales\/Orders as txt, attempt 1 \(manual\), run [0-9a-f-]{36}$/m,
  );
  expect(pretty.stderr).toMatch(
    /^\d\d:\d\d:\d\d orders: page 8: 100 rows, [\d.]+ kB, [\d,]+ rows\/s — 1,500 rows, [\d.]+ MB in [\d.]+ s so far$/m,
  );
  expect(pretty.stderr).not.toContain('{"level"');
  // A real terminal (script(1) gives the command a pseudo-terminal) gets the readable lines without any option.
  // Spawned asynchronously: the simulator answers from this process.
  const env = {
    ...process.env,
    SIM_URL: h.sim.url,
    SIM_SECRET: 'demo-secret',
    DATABASE_URL,
    REDIS_URL,
    LOG_FORMAT: '',
  };
  const tty = await new Promise<{ status: number | null; stdout: string }>((resolve, reject) => {
    const child = spawn(
      'script',
      [
        '-qec',
        `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} run orders --config ${JSON.stringify(configPath)}`,
        '/dev/null',
      ],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout }));
  });
  expect(tty.status).toBe(0);
  expect(tty.stdout).toMatch(/orders: page 1: 200 rows/);
  expect(tty.stdout).not.toContain('"msg":"page loaded"');
});
