/**
 * The README's promises to a newcomer: the two commands, a Commands table that matches the CLI, and "One run by hand"
 * working as written (its jobs.yaml and its commands, against the simulator over HTTP).
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { allCommands } from '../src/cli/commands.ts';
import { runCli } from './support/cli.ts';
import { uniqueName } from './support/env.ts';
import { startHarness, type Harness } from './support/harness.ts';
import { deleteKeys } from './support/queue-env.ts';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** The text of the README's `## title` section, up to the next `## `. */
function section(title: string): string {
  const start = README.indexOf(`\n## ${title}\n`);
  expect(start, `README section "${title}"`).toBeGreaterThan(0);
  const end = README.indexOf('\n## ', start + 1);
  return README.slice(start, end < 0 ? undefined : end);
}

/** The fenced code blocks of a text in the given language, in order. */
function blocks(text: string, lang: string): string[] {
  return [...text.matchAll(new RegExp('^```' + lang + '\\n([\\s\\S]*?)^```$', 'gm'))].map((m) => m[1]!);
}

it('README.md gives the two commands, and every command it documents exists in the CLI', async () => {
  expect(README).toContain('npm ci && npm run demo');
  expect(README).toContain('npm ci && npm test');
  const program = new Command('report-etl');
  for (const register of await allCommands())
    register(program, { out: () => undefined, err: () => undefined, exit: () => undefined });
  const names = new Set(program.commands.map((c) => c.name()));
  const documented = [...section('Commands').matchAll(/^\| `([a-z]+)[ `]/gm)].map((m) => m[1]!);
  expect(documented.length).toBeGreaterThan(10);
  for (const name of documented) expect(names.has(name), `README documents "${name}"`).toBe(true);
  for (const name of names) expect(documented, `README lacks "${name}"`).toContain(name);
});

let h: Harness;
/** The queue prefix of the commands run as the README writes them: its keys are deleted after. */
const prefix = uniqueName('readme');
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  if (h) await deleteKeys(h.redis, prefix);
  await h?.close();
});

it('"One run by hand" works as written: its jobs.yaml validates, runs and shows up in the run history', async () => {
  const text = section('One run by hand');
  const [yaml] = blocks(text, 'yaml');
  const [sh] = blocks(text, 'sh');
  // The README's table, in this file's schema; everything else as written.
  expect(yaml).toContain('table: public.orders');
  const dir = await mkdtemp(join(tmpdir(), 'report-etl-readme-'));
  const config = join(dir, 'one-job.yaml');
  await writeFile(config, yaml!.replace('table: public.orders', `table: ${h.schema}.orders`));

  const lines = sh!
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter(Boolean);
  expect(lines).toContain('export REPORT_ETL_CONFIG=one-job.yaml');
  const commands = lines
    .filter((l) => l.startsWith('npx report-etl ') && !l.includes(' simulate '))
    .map((l) => l.slice('npx report-etl '.length).split(/\s+/));
  expect(commands.map((c) => c[0])).toEqual(['validate', 'run', 'runs']);
  const preview = /`npx report-etl (preview [^`]+)`/.exec(text);
  expect(preview, 'the preview command').not.toBeNull();
  commands.push(preview![1]!.split(/\s+/));

  const env = {
    REPORT_ETL_CONFIG: config,
    REPORT_BASE_URL: h.sim.url,
    REPORT_ETL_QUEUE_PREFIX: prefix,
  };
  const out: Record<string, string> = {};
  for (const args of commands) {
    const r = await runCli(args, { env });
    expect(r.code, `${args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(0);
    out[args[0]!] = r.stdout;
  }
  expect(out.run).toMatch(/^orders: succeeded, [1-9]\d* rows/);
  const { rows } = await h.pool.query<{ run_key: string; rows: number }>(
    `SELECT run_key, rows::int FROM etl.attempts WHERE job = 'orders' AND target_table = $1 AND status = 'succeeded'`,
    [`${h.schema}.orders`],
  );
  expect(rows).toHaveLength(1);
  const { rows: loaded } = await h.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${h.schema}.orders`);
  expect(loaded[0]!.n).toBe(rows[0]!.rows);
  expect(out.runs).toContain(rows[0]!.run_key);
  expect(out.preview).toContain('nothing was loaded');
});
