/**
 * deploy/grafana-dashboard.json and deploy/prometheus-rules.yaml against the real admin server: every PromQL
 * expression of the rules, of the dashboard's panels and of its variables parses with Prometheus's own grammar
 * (@prometheus-io/lezer-promql), and every metric they name is one that /metrics exports, scraped over HTTP from an
 * admin server on the real PostgreSQL and Redis with a jobs.yaml that turns every metric on. `promtool check rules`
 * runs too where it is installed.
 */
import { accessSync, constants, readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parser } from '@prometheus-io/lezer-promql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { staticConfig } from '../src/config/live-config.ts';
import { configSchema } from '../src/config/schema.ts';
import type { AdminServer } from '../src/admin/server.ts';
import { makeQueue, type RunQueue } from '../src/queue/queue.ts';
import { uniqueName } from './support/env.ts';
import { startHarness, type Harness } from './support/harness.ts';
import { deleteKeys } from './support/queue-env.ts';
import { adminServerOf } from './support/admin-login.ts';

const RULES = new URL('../deploy/prometheus-rules.yaml', import.meta.url);
const DASHBOARD = new URL('../deploy/grafana-dashboard.json', import.meta.url);
const token = uniqueName('tok');

let h: Harness;
let prefix: string;
let queue: RunQueue;
let server: AdminServer;

beforeAll(async () => {
  h = await startHarness();
  prefix = uniqueName('deployq');
  queue = makeQueue(h.redis, prefix);
  // The live jobs.yaml turns on the per-job and per-connection metrics; a user-dependent connection the login one.
  const config = configSchema.parse({
    connections: {
      sim: { baseUrl: h.sim.url, clientId: 'demo-client', clientSecret: 'demo-secret', freshness: '26h' },
      user: {
        baseUrl: h.sim.url,
        auth: 'authorization_code',
        clientId: uniqueName('never'),
        scopes: ['svc.pad'],
        redirectUri: 'https://etl.example.com/oauth/callback',
      },
    },
    jobs: {
      [uniqueName('deploy')]: {
        connection: 'sim',
        report: { mandant: 7777, name: 'Sales/Orders' },
        target: { table: `${h.schema}.orders` },
      },
    },
  });
  server = await adminServerOf(h, queue, { auth: { token }, liveConfig: staticConfig(config) });
});

afterAll(async () => {
  await server?.close();
  await queue?.close();
  if (h) {
    await deleteKeys(h.redis, prefix);
    await h.close();
  }
});

async function scrape(): Promise<string> {
  const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return res.text();
}

/** One PromQL expression and where it was found, for the failure messages. */
interface Expr {
  where: string;
  promql: string;
}

/** What the grammar says of one expression: its syntax errors (as `at N: text`) and the metric names it selects. */
function analyse(promql: string): { errors: string[]; metrics: string[]; unnamed: string[] } {
  const errors: string[] = [];
  const metrics: string[] = [];
  const unnamed: string[] = [];
  const tree = parser.parse(promql);
  tree.iterate({
    enter(node) {
      if (node.type.isError) errors.push(`at ${node.from}: ${JSON.stringify(promql.slice(node.from, node.from + 20))}`);
      if (node.name !== 'VectorSelector') return;
      const identifier = node.node.getChild('Identifier');
      if (identifier) return void metrics.push(promql.slice(identifier.from, identifier.to));
      // {__name__="x"} names its metric in a matcher; a selector with no name at all cannot be checked.
      const byName = node.node
        .getChild('LabelMatchers')
        ?.getChildren('UnquotedLabelMatcher')
        .find(
          (m) =>
            promql.slice(m.getChild('LabelName')!.from, m.getChild('LabelName')!.to) === '__name__' &&
            m.getChild('MatchOp')?.getChild('EqlSingle'),
        );
      const literal = byName?.getChild('StringLiteral');
      if (literal) metrics.push(JSON.parse(promql.slice(literal.from, literal.to)) as string);
      else unnamed.push(promql.slice(node.from, node.to));
    },
  });
  return { errors, metrics, unnamed };
}

/** The metric names an exposition text exports: each family of a `# TYPE` line with the series names its type has. */
function exportedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = m as unknown as [string, string, string];
    names.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(`${name}${s}`);
    if (type === 'summary') for (const s of ['_sum', '_count']) names.add(`${name}${s}`);
    if (type === 'counter' && !name.endsWith('_total')) names.add(`${name}_total`);
  }
  for (const line of text.split('\n')) if (line && !line.startsWith('#')) names.add(line.split(/[{ ]/, 1)[0]!);
  return names;
}

interface Rule {
  alert?: string;
  record?: string;
  expr?: unknown;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

function rulesFile(): { groups: Array<{ name: string; rules: Rule[] }> } {
  return parseYaml(readFileSync(RULES, 'utf8')) as { groups: Array<{ name: string; rules: Rule[] }> };
}

function ruleExprs(): Expr[] {
  return rulesFile().groups.flatMap((g) =>
    g.rules.map((r) => ({ where: `rule ${r.alert ?? r.record}`, promql: String(r.expr) })),
  );
}

interface Panel {
  id?: number;
  title?: string;
  type?: string;
  datasource?: { type?: string; uid?: string };
  targets?: Array<{ expr?: string; refId?: string; datasource?: { uid?: string } }>;
  panels?: Panel[];
}
interface Variable {
  name: string;
  type: string;
  query?: string | { query?: string };
  current?: { value?: string | string[] };
}
interface Dashboard {
  schemaVersion: number;
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Variable[] };
}

const dashboard = (): Dashboard => JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;

/** Every panel, with the panels of collapsed rows. */
function allPanels(d: Dashboard): Panel[] {
  return d.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
}

/** Grafana's built-in range variables, as a current Grafana fills them in. */
const GRAFANA_RANGES: Record<string, string> = { __rate_interval: '1m', __interval: '30s', __range: '1d' };

/**
 * A query as Grafana sends it to Prometheus: range variables become their duration, the dashboard's interval
 * variables their current value, and its other variables a regex (valid where they belong: inside a string).
 * @throws Error naming a variable the dashboard does not define
 */
function filledIn(query: string, d: Dashboard): string {
  return query.replace(/\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]/g, (_all, a?: string, b?: string, c?: string) => {
    const name = (a ?? b ?? c)!;
    if (GRAFANA_RANGES[name]) return GRAFANA_RANGES[name];
    const v = d.templating.list.find((x) => x.name === name);
    if (!v) throw new Error(`the dashboard uses $${name}, which it does not define: ${query}`);
    return v.type === 'interval' ? String(v.current?.value) : '.*';
  });
}

function dashboardExprs(d: Dashboard): Expr[] {
  const out: Expr[] = [];
  for (const p of allPanels(d)) {
    for (const t of p.targets ?? [])
      out.push({ where: `panel "${p.title}" target ${t.refId}`, promql: filledIn(t.expr ?? '', d) });
  }
  for (const v of d.templating.list.filter((x) => x.type === 'query')) {
    const q = typeof v.query === 'string' ? v.query : (v.query?.query ?? '');
    const m = /^label_values\((.+),\s*(\w+)\)$/.exec(q);
    if (!m) throw new Error(`variable ${v.name}: only label_values(<selector>, <label>) is checked here, not ${q}`);
    out.push({ where: `variable ${v.name}`, promql: filledIn(m[1]!, d) });
  }
  return out;
}

/** The problems of a set of expressions: syntax errors, selectors without a metric name, metrics not exported. */
function problemsOf(exprs: Expr[], exported: Set<string>): string[] {
  const problems: string[] = [];
  for (const e of exprs) {
    const a = analyse(e.promql);
    if (!e.promql.trim()) problems.push(`${e.where}: empty expression`);
    for (const err of a.errors) problems.push(`${e.where}: syntax error ${err} in ${e.promql}`);
    for (const s of a.unnamed) problems.push(`${e.where}: selector ${s} names no metric`);
    for (const m of a.metrics) if (!exported.has(m)) problems.push(`${e.where}: ${m} is not a metric /metrics exports`);
  }
  return problems;
}

/** promtool from PATH, when installed. */
function promtool(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    try {
      accessSync(join(dir, 'promtool'), constants.X_OK);
      return join(dir, 'promtool');
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

describe('deploy/: the Grafana dashboard and the Prometheus rules', () => {
  it('every PromQL expression parses with the Prometheus grammar and names only metrics /metrics exports', async () => {
    const exported = exportedNames(await scrape());
    // The check can fail: an unknown metric, a selector without a name and a syntax error are each caught.
    expect(problemsOf([{ where: 'probe', promql: 'report_etl_no_such_metric == 1' }], exported)).toEqual([
      'probe: report_etl_no_such_metric is not a metric /metrics exports',
    ]);
    expect(problemsOf([{ where: 'probe', promql: 'sum(report_etl_job_stale' }], exported)).toHaveLength(1);
    expect(problemsOf([{ where: 'probe', promql: '{job="x"}' }], exported)).toEqual([
      'probe: selector {job="x"} names no metric',
    ]);
    expect(
      problemsOf(
        [
          {
            where: 'probe',
            promql: '{__name__="report_etl_job_stale"} and rate(report_etl_attempt_duration_seconds_count[5m])',
          },
        ],
        exported,
      ),
    ).toEqual([]);

    const rules = ruleExprs();
    const panels = dashboardExprs(dashboard());
    expect(rules.length).toBeGreaterThanOrEqual(4);
    expect(panels.length).toBeGreaterThanOrEqual(15);
    expect(problemsOf([...rules, ...panels], exported)).toEqual([]);
    // Every metric the rules and the dashboard rest on, so that none of them is checked by its absence.
    const named = [...rules, ...panels].flatMap((e) => analyse(e.promql).metrics);
    for (const m of [
      'report_etl_job_failing',
      'report_etl_job_stale',
      'report_etl_login_required',
      'report_etl_workers_alive',
      'report_etl_attempts_total',
      'report_etl_job_last_success_timestamp_seconds',
      'report_etl_job_freshness_seconds',
      'report_etl_attempt_duration_seconds_bucket',
      'report_etl_rows_loaded_total',
      'report_etl_report_slots_in_use',
      'report_etl_report_slots_limit',
      'report_etl_runs_waiting_for_slot',
    ]) {
      expect(named, m).toContain(m);
    }

    // Prometheus's own checker, where it is installed (the grammar above is checked either way).
    const tool = promtool();
    if (tool) {
      const r = spawnSync(tool, ['check', 'rules', fileURLToPath(RULES)], { encoding: 'utf8' });
      expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
    }
  });

  it(
    'the rules are alerting rules Prometheus loads: expr, for, a severity, ' +
      'a summary and a description that says what to do',
    () => {
      const file = rulesFile();
      const rules = file.groups.flatMap((g) => g.rules);
      expect(file.groups.map((g) => g.name)).toEqual(['report-etl']);
      expect(rules.map((r) => r.alert)).toEqual([
        'ReportEtlRunFailed',
        'ReportEtlJobStale',
        'ReportEtlLoginRequired',
        'ReportEtlNoWorkerAlive',
      ]);
      for (const r of rules) {
        expect(Object.keys(r).sort(), r.alert).toEqual(['alert', 'annotations', 'expr', 'for', 'labels']);
        expect(r.for, r.alert).toMatch(/^\d+[smh]$/);
        expect(['warning', 'critical'], r.alert).toContain(r.labels?.severity);
        expect(r.annotations?.summary, r.alert).toBeTruthy();
        expect(r.annotations?.description, r.alert).toContain('docs/troubleshooting.md');
      }
      const troubleshooting = readFileSync(new URL('../docs/troubleshooting.md', import.meta.url), 'utf8');
      expect(troubleshooting).toContain('# Troubleshooting');
      expect(troubleshooting).toContain('| `LOGIN_REQUIRED`');
    },
  );

  it(
    'the dashboard imports into a current Grafana: a Prometheus datasource variable every query uses, ' +
      'unique panel ids, grid positions',
    () => {
      const d = dashboard();
      expect(d.schemaVersion).toBeGreaterThanOrEqual(39);
      expect(d.uid).toBe('report-etl');
      const ds = d.templating.list.find((v) => v.type === 'datasource');
      expect(ds).toMatchObject({ name: 'datasource', query: 'prometheus' });
      const panels = allPanels(d);
      const ids = panels.map((p) => p.id);
      expect(new Set(ids).size).toBe(ids.length);
      for (const p of panels.filter((x) => x.type !== 'row')) {
        expect(p.datasource, p.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
        expect(p.targets?.length, p.title).toBeGreaterThan(0);
        for (const t of p.targets ?? []) expect(t.datasource?.uid, p.title).toBe('${datasource}');
      }
      // No panel overlaps another on Grafana's 24-column grid.
      const cells = new Set<string>();
      for (const p of panels as Array<Panel & { gridPos: { x: number; y: number; w: number; h: number } }>) {
        expect(p.gridPos.x + p.gridPos.w, p.title).toBeLessThanOrEqual(24);
        for (let x = p.gridPos.x; x < p.gridPos.x + p.gridPos.w; x++) {
          for (let y = p.gridPos.y; y < p.gridPos.y + p.gridPos.h; y++) {
            expect(cells.has(`${x},${y}`), `${p.title} overlaps at ${x},${y}`).toBe(false);
            cells.add(`${x},${y}`);
          }
        }
      }
    },
  );
});
