/**
 * Loads jobs.yaml: read, parse (keeping positions), interpolate `${VAR}`, validate with the zod schema and the
 * checks zod cannot do (cron, time zones, catch-up windows, report names, secrets from the environment).
 * Every problem is collected and thrown at once as one {@link ConfigError} (docs/architecture.md; README "Configuration reference": what is wrong, where, how to fix).
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { ConfigError } from '../errors.ts';
import { validateConfigIsolated, type InvalidEntry } from './isolate.ts';
import { configSchema, type ConnectionConfig, type EtlConfig, type JobConfig } from './schema.ts';
import { checkConfigText, parseCoercing, type CheckOptions } from './check.ts';
import { closestMatch, get } from './problems.ts';
import { qualifiedTarget, targetWarnings, type TargetCatalogue } from './target-checks.ts';
import type { TableName } from '../warehouse/identifiers.ts';

/** A validated jobs.yaml. */
export interface LoadedConfig {
  /** The path the file was loaded from, as given by the caller. */
  path: string;
  config: EtlConfig;
  /** sha256 of the file text, hex; for change detection. */
  hash: string;
  /**
   * Jobs and alert targets left out of `config` because they are invalid (isolation, see config/isolate.ts);
   * always empty when loaded strictly.
   */
  invalid: InvalidEntry[];
  /** Loaded with isolation: each valid job as written (config/isolate.ts IsolatedConfig.writtenJobs). */
  writtenJobs?: Record<string, string>;
  /** Loaded with isolation: jobs kept running despite a shared target (config/isolate.ts IsolatedConfig.keptRunning). */
  keptRunning?: InvalidEntry[];
}

/** Options of {@link loadConfig}. */
export interface LoadOptions {
  /**
   * Isolate invalid jobs: keep the valid ones in `config` and list the others in `invalid`, instead of
   * throwing for any problem. Only an unparseable file or a problem outside jobs, connections and alerts throws.
   */
  isolate?: boolean;
  /**
   * What PostgreSQL holds under the jobs' target names (`report-etl validate` reads it): target names are then checked
   * against existing targets too (target-checks.ts).
   */
  targets?: TargetCatalogue | undefined;
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

export { parseWindow } from './duration.ts';
export { isTimeZone } from './check.ts';

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
 * @param options `isolate` invalid jobs; `targets`: check target names against existing targets too (strict only)
 * @throws ConfigError listing every problem (code CONFIG_INVALID); also when the file cannot be read
 */
export async function loadConfig(
  path: string,
  env: NodeJS.ProcessEnv = process.env,
  options: LoadOptions = {},
): Promise<LoadedConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const hint =
      code === 'ENOENT'
        ? 'file not found: pass --config PATH or set REPORT_ETL_CONFIG'
        : `cannot read: ${code ?? String(err)}`;
    throw new ConfigError([`${path}: ${hint}`], { cause: err });
  }
  const hash = createHash('sha256').update(text).digest('hex');
  if (options.isolate) return { path, hash, ...validateConfigIsolated(text, path, env) };
  return { path, config: validateConfigText(text, path, env, { targets: options.targets }), hash, invalid: [] };
}

/**
 * The target tables a jobs.yaml names (schema defaulted, each once), of every job whose `target.table` is a valid
 * name, valid job or not: what `report-etl validate` looks up in PostgreSQL's catalogue before it checks the file.
 * @returns no tables when the file cannot be read or parsed (loading it then says why)
 */
export async function configTargetTables(path: string, env: NodeJS.ProcessEnv = process.env): Promise<TableName[]> {
  let data: unknown;
  try {
    data = checkConfigText(await readFile(path, 'utf8'), path, env).data;
  } catch {
    return [];
  }
  const jobs = get(data, ['jobs']);
  const tables = new Map<string, TableName>();
  for (const job of jobs !== null && typeof jobs === 'object' ? Object.values(jobs) : []) {
    const t = qualifiedTarget(get(job, ['target', 'table']));
    if (t) tables.set(`${t.schema}.${t.table}`, t);
  }
  return [...tables.values()];
}

/**
 * Validates jobs.yaml text strictly (`report-etl validate`): any problem fails the whole file.
 * @param file the name to show in problems
 * @throws ConfigError listing every problem
 */
export function validateConfigText(
  text: string,
  file: string,
  env: NodeJS.ProcessEnv = process.env,
  options: CheckOptions = {},
): EtlConfig {
  const checked = checkConfigText(text, file, env, options);
  const result = parseCoercing(configSchema, checked.data, [], checked.interpolated);
  if (checked.problems.length > 0 || !result.success) {
    const texts = checked.problems.map((p) => p.text);
    if (texts.length === 0 && !result.success) texts.push(`${file}: ${result.error.message}`);
    throw new ConfigError([...new Set(texts)]);
  }
  return result.data;
}

/**
 * What is allowed but probably wrong in a valid config, one line each (`validate` prints them and still exits 0):
 * a redirectUri on localhost (docs/report-export-service.md "User-dependent service user" step 1: it must be reachable from the server,
 * localhost generally is not); jobs sharing a target table alike, and declared columns an existing target lacks
 * (target-checks.ts `targetWarnings`; the latter with `targets` only).
 */
export function configWarnings(cfg: EtlConfig, file = 'jobs.yaml', targets?: TargetCatalogue): string[] {
  const out: string[] = [];
  for (const [name, c] of Object.entries(cfg.connections)) {
    if (c.auth !== 'authorization_code' || !c.redirectUri) continue;
    const host = new URL(c.redirectUri).hostname.replace(/^\[|\]$/g, '');
    if (
      host === 'localhost' ||
      host.endsWith('.localhost') ||
      host === '::1' ||
      /^127\./.test(host) ||
      host === '0.0.0.0'
    ) {
      out.push(
        `${file}: connections.${name}.redirectUri: ${c.redirectUri} is on this machine: the ERP server must reach the redirect URI (docs/report-export-service.md "User-dependent service user" step 1: localhost is generally not possible); ` +
          'use a host name the browser and the server can reach, or finish each login by pasting the redirected URL (`report-etl login --redirected-url`)',
      );
    }
  }
  out.push(...targetWarnings(cfg, file, targets));
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
    throw new ConfigError([
      `unknown job "${name}" in ${file} (${near ? `did you mean "${near}"? ` : ''}known: ${known.join(', ') || 'none'})`,
    ]);
  }
  const connection = cfg.connections[job.connection];
  if (!connection) throw new ConfigError([`${file}: jobs.${name}.connection: unknown connection "${job.connection}"`]);
  return { name, job, connection, connectionName: job.connection, zone: job.timezone ?? connection.timezone };
}
