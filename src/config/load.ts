/**
 * Loads jobs.yaml: read, parse (keeping positions), interpolate `${VAR}`, validate with the zod schema and the
 * checks zod cannot do (cron, time zones, catch-up windows, report names, secrets from the environment).
 * Every problem is collected and thrown at once as one {@link ConfigError} (DESIGN.md "data engineers expect
 * a typo to be caught before anything runs"; CONVENTIONS.md "Config": what is wrong, where, how to fix).
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { isScalar, LineCounter, parseDocument, type Document } from 'yaml';
import { validateDetailed } from 'node-cron';
import type { z } from 'zod';
import { ConfigError, coerceError } from '../errors.ts';
import { checkReportName, isReportNameProblem } from '../report-api/report-name.ts';
import { secretKeyProblem, SECRET_KEY_ENV } from '../secret-box.ts';
import { configSchema, jobSchema, type ConnectionConfig, type EtlConfig, type JobConfig } from './schema.ts';
import { formatPath, interpolate, WHOLE_REFERENCE, type ConfigPath } from './interpolate.ts';
import { closestMatch, get, issueProblems, makeLocator, syntaxProblems, type Located, type Locator } from './problems.ts';

/** A validated jobs.yaml. */
export interface LoadedConfig {
  /** The path the file was loaded from, as given by the caller. */
  path: string;
  config: EtlConfig;
  /** sha256 of the file text, hex; for change detection. */
  hash: string;
}

/** A job looked up by name, with its connection resolved. */
export interface ResolvedJob {
  name: string;
  job: JobConfig;
  connection: ConnectionConfig;
  connectionName: string;
  /** IANA zone of the job's schedule and logical time: its own `timezone`, else its connection's. */
  zone: string;
}

/** The zone of a job's schedule: its own `timezone`, else its connection's, else UTC. */
export function scheduleZone(cfg: EtlConfig, job: JobConfig): string {
  return job.timezone ?? cfg.connections[job.connection]?.timezone ?? 'UTC';
}

const WINDOW = /^([1-9][0-9]*)(s|m|h|d|w)$/;
const WINDOW_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * Parses a catch-up window (`catchup: { all: 2d }`): a positive integer and a unit s, m, h, d or w.
 * @returns the window in ms, or undefined when the text is not a window
 */
export function parseWindow(text: string): number | undefined {
  const m = WINDOW.exec(text.trim());
  return m ? Number(m[1]) * WINDOW_MS[m[2]!]! : undefined;
}

/** Whether `zone` is an IANA time zone this Node knows (Intl throws RangeError otherwise). */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The checks zod cannot express; each flags its path so that a schema refinement is not repeated. */
function extraChecks(doc: Document, data: unknown, loc: Locator, file: string, flagged: Set<string>, env: NodeJS.ProcessEnv): Located[] {
  const out: Located[] = [];
  const add = (path: ConfigPath, text: string) => {
    const pos = loc.node(path);
    flagged.add(formatPath(path));
    out.push({ ...pos, text: `${file}:${pos.line}:${pos.col}: ${formatPath(path)}: ${text}` });
  };
  const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
  const zone = (path: ConfigPath, v: unknown) => {
    if (typeof v === 'string' && !isTimeZone(v)) add(path, `unknown time zone "${v}": write an IANA zone name such as Europe/Zurich or UTC`);
  };
  const connections = get(data, ['connections']);
  const known = isObj(connections) ? Object.keys(connections) : [];
  for (const name of known) {
    const path = ['connections', name];
    const secretNode = doc.getIn([...path, 'clientSecret'], true);
    // The source text decides, not the resolved value: a secret written into the file is a leak already.
    // Through a merge key (<<: *template) there is no node to check: refuse that too.
    const written = secretNode !== undefined || get(data, [...path, 'clientSecret']) !== undefined;
    if (written && !(isScalar(secretNode) && typeof secretNode.value === 'string' && WHOLE_REFERENCE.test(secretNode.value))) {
      add([...path, 'clientSecret'], 'clientSecret must come from the environment: write ${REPORT_CLIENT_SECRET} (any variable name) instead of the secret itself');
    }
    zone([...path, 'timezone'], get(data, [...path, 'timezone']));
    // The refresh token of a user-dependent service user is stored encrypted, never in plaintext: no key, no login.
    const keyProblem = get(data, [...path, 'auth']) === 'authorization_code' ? secretKeyProblem(env[SECRET_KEY_ENV]) : undefined;
    if (keyProblem !== undefined) add([...path, 'auth'], `auth: authorization_code keeps the refresh token encrypted in PostgreSQL, but ${keyProblem}`);
  }
  const jobs = get(data, ['jobs']);
  for (const [name, job] of Object.entries(isObj(jobs) ? jobs : {})) {
    if (!isObj(job)) continue;
    const path = ['jobs', name];
    if (typeof job.connection === 'string' && known.length > 0 && !known.includes(job.connection)) {
      const near = closestMatch(job.connection, known);
      add([...path, 'connection'], `unknown connection "${job.connection}" (${near ? `did you mean "${near}"? ` : ''}known: ${known.join(', ')})`);
    }
    if (typeof job.schedule === 'string') {
      const v = validateDetailed(job.schedule);
      if (!v.valid) {
        const why = v.errors.map((e) => e.message).join('; ');
        add([...path, 'schedule'], `invalid cron expression "${job.schedule}": ${why} (5 fields "min hour day month weekday", or 6 with seconds first, e.g. "15 2 * * *")`);
      }
    }
    zone([...path, 'timezone'], job.timezone);
    const all = get(job, ['catchup', 'all']);
    if (typeof all === 'string' && parseWindow(all) === undefined) {
      add([...path, 'catchup', 'all'], `invalid catch-up window "${all}": write a number and a unit s, m, h, d or w, e.g. 30m, 12h, 2d`);
    }
    const report = get(job, ['report', 'name']);
    if (typeof report === 'string' && report !== '') {
      const checked = checkReportName(report);
      if (isReportNameProblem(checked)) {
        const what = checked.kind === 'character' ? 'has characters the server rejects' : 'is malformed';
        add([...path, 'report', 'name'], `report name "${report}" ${what}: it ${checked.problem} (${checked.howToFix})`);
      }
    }
  }
  return out;
}

/**
 * Reads, parses, interpolates and validates a jobs.yaml.
 *
 * Problems are collected, not thrown one by one: YAML syntax errors (then nothing else is checked, since the
 * structure is unreliable), missing environment variables, every zod issue, and the extra checks (cron via
 * node-cron, time zones via Intl, catch-up windows, report name characters, clientSecret given as `${VAR}`).
 * Each problem reads `file:line:col: yaml.path: what is wrong (how to fix)`, sorted by position.
 * A value that came from `${VAR}` where the schema wants a number is converted when it is numeric.
 *
 * @param path the file; shown in problems as given
 * @param env the environment for `${VAR}` (default process.env)
 * @throws ConfigError listing every problem (code CONFIG_INVALID); also when the file cannot be read
 */
export async function loadConfig(path: string, env: NodeJS.ProcessEnv = process.env): Promise<LoadedConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const hint = code === 'ENOENT' ? 'file not found: pass --config PATH or set REPORT_ETL_CONFIG' : `cannot read: ${code ?? String(err)}`;
    throw new ConfigError([`${path}: ${hint}`], { cause: err });
  }
  return { path, config: validateConfigText(text, path, env), hash: createHash('sha256').update(text).digest('hex') };
}

/**
 * Validates jobs.yaml text (the work of {@link loadConfig} without the file read).
 * @param file the name to show in problems
 * @throws ConfigError listing every problem
 */
export function validateConfigText(text: string, file: string, env: NodeJS.ProcessEnv = process.env): EtlConfig {
  const lines = new LineCounter();
  // merge: `<<: *template` lets similar jobs share a block (YAML 1.1 merge keys).
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: true, uniqueKeys: true, merge: true });
  if (doc.errors.length > 0) throw new ConfigError(syntaxProblems(doc.errors, text, lines, file));
  const loc = makeLocator(doc, lines);
  let raw: unknown;
  try {
    raw = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    throw new ConfigError([`${file}: ${coerceError(err).message}`], { cause: err });
  }
  const envProblems: string[] = [];
  const envPaths: ConfigPath[] = [];
  const interpolated = new Set<string>();
  const data = interpolate(raw, env, [], envProblems, file, {
    locate: (p) => {
      const pos = loc.node(p);
      return `${pos.line}:${pos.col}`;
    },
    onInterpolated: (p) => interpolated.add(JSON.stringify(p)),
    onProblem: (p) => envPaths.push(p),
  });
  if (data === null || data === undefined) {
    throw new ConfigError([`${file}:1:1: the file is empty: it needs connections and jobs (see the sample jobs.yaml)`]);
  }
  const located: Located[] = envProblems.map((text, i) => ({ ...loc.node(envPaths[i] ?? []), text }));
  // A value whose variable is missing fails the schema too; its env problem says it all.
  const missingVar = new Set(envPaths.map((p) => formatPath(p)));
  const flagged = new Set<string>();
  located.push(...extraChecks(doc, data, loc, file, flagged, env));

  const result = parseCoercing(configSchema, data, [], interpolated);
  const issues: { issue: z.core.$ZodIssue; base: ConfigPath }[] = result.success ? [] : result.error.issues.map((issue) => ({ issue, base: [] }));
  for (const { issue } of [...issues]) {
    // zod skips the value of a record entry whose key is invalid: validate that job on its own.
    if (issue.code === 'invalid_key' && issue.path[0] === 'jobs' && issue.path.length === 2) {
      const base = issue.path as ConfigPath;
      const job = parseCoercing(jobSchema, get(data, base), base, interpolated);
      if (!job.success) issues.push(...job.error.issues.map((i) => ({ issue: i, base })));
    }
  }
  for (const { issue, base } of issues) {
    const where = formatPath([...base, ...(issue.path as ConfigPath)]);
    // Extra checks already said it (unknown connection), or a missing variable explains it.
    if (missingVar.has(where) || (issue.code === 'custom' && flagged.has(where))) continue;
    located.push(...issueProblems(issue, base, data, loc, file));
  }
  if (located.length > 0 || !result.success) {
    located.sort((a, b) => a.line - b.line || a.col - b.col);
    throw new ConfigError([...new Set(located.map((p) => p.text))]);
  }
  return result.data;
}

/**
 * safeParse, but where the schema wants a number and the value came from `${VAR}` as numeric text, convert it
 * (in place) and parse again: interpolation yields text, and `paging: "${PAGING}"` should work.
 */
function parseCoercing<S extends z.ZodType>(schema: S, data: unknown, base: ConfigPath, interpolated: Set<string>) {
  const result = schema.safeParse(data);
  if (result.success) return result;
  let changed = false;
  for (const issue of result.error.issues) {
    const path = issue.path as ConfigPath;
    const value = get(data, path);
    const wantsNumber = issue.code === 'invalid_type' && (issue.expected === 'number' || issue.expected === 'int');
    if (wantsNumber && interpolated.has(JSON.stringify([...base, ...path])) && typeof value === 'string' && /^-?[0-9]+(\.[0-9]+)?$/.test(value)) {
      (get(data, path.slice(0, -1)) as Record<string | number, unknown>)[path[path.length - 1]!] = Number(value);
      changed = true;
    }
  }
  return changed ? schema.safeParse(data) : result;
}

/**
 * What is allowed but probably wrong in a valid config, one line each (`validate` prints them and still exits 0):
 * a redirectUri on localhost (spec "User-dependent service user" step 1: it must be reachable from the server,
 * localhost generally is not).
 */
export function configWarnings(cfg: EtlConfig, file = 'jobs.yaml'): string[] {
  const out: string[] = [];
  for (const [name, c] of Object.entries(cfg.connections)) {
    if (c.auth !== 'authorization_code' || !c.redirectUri) continue;
    const host = new URL(c.redirectUri).hostname.replace(/^\[|\]$/g, '');
    if (host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127\./.test(host) || host === '0.0.0.0') {
      out.push(
        `${file}: connections.${name}.redirectUri: ${c.redirectUri} is on this machine: the ERP server must reach the redirect URI (spec "User-dependent service user" step 1: localhost is generally not possible); ` +
          'use a host name the browser and the server can reach, or finish each login by pasting the redirected URL (`report-etl login --redirected-url`)',
      );
    }
  }
  return out;
}

/**
 * Looks a job up by name and resolves its connection.
 * @param file the config file name to show in the error (default "jobs.yaml")
 * @throws ConfigError `unknown job "x" in jobs.yaml (known: a, b)`, with a "did you mean" when close
 */
export function resolveJob(cfg: EtlConfig, name: string, file = 'jobs.yaml'): ResolvedJob {
  const job = Object.hasOwn(cfg.jobs, name) ? cfg.jobs[name] : undefined;
  if (!job) {
    const known = Object.keys(cfg.jobs);
    const near = closestMatch(name, known);
    throw new ConfigError([`unknown job "${name}" in ${file} (${near ? `did you mean "${near}"? ` : ''}known: ${known.join(', ') || 'none'})`]);
  }
  const connection = cfg.connections[job.connection];
  if (!connection) throw new ConfigError([`${file}: jobs.${name}.connection: unknown connection "${job.connection}"`]);
  return { name, job, connection, connectionName: job.connection, zone: job.timezone ?? connection.timezone };
}
