/**
 * Loads jobs.yaml: read, check (check.ts), and validate strictly or with invalid jobs isolated (isolate.ts). Every
 * problem is thrown at once in one {@link ConfigError} (docs/configuration.md "Configuration reference").
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { ConfigError } from '../errors.ts';
import { validateConfigIsolated, type InvalidEntry, type RunningJobs } from './isolate.ts';
import { configSchema, type ArchiveConfig, type ConnectionConfig, type EtlConfig, type JobConfig } from './schema.ts';
import { checkConfigText, parseCoercing, type CheckOptions } from './check.ts';
import { get } from './problems.ts';
import { closestMatch } from '../closest-match.ts';
import { qualifiedTarget, targetWarnings, type TargetCatalogue } from './target-checks.ts';
import type { TableName } from '../warehouse/identifiers.ts';
import { mandantColumnOf, mandantList, parseSubject, type MandantOfRun } from './mandants.ts';

/** A validated jobs.yaml. */
export interface LoadedConfig {
  /** As given by the caller. */
  path: string;
  config: EtlConfig;
  /** sha256 of the text, hex. */
  hash: string;
  /** Jobs and alert targets left out as invalid (isolate.ts); empty when loaded strictly. */
  invalid: InvalidEntry[];
  /** With isolation: isolate.ts IsolatedConfig.writtenJobs. */
  writtenJobs?: Record<string, string>;
  /** With isolation: isolate.ts IsolatedConfig.keptRunning. */
  keptRunning?: InvalidEntry[];
}

/** Options of {@link loadConfig}. */
export interface LoadOptions {
  /** Isolate invalid jobs instead of throwing for any problem (isolate.ts). */
  isolate?: boolean;
  /** Strict only: what PostgreSQL holds under the target names, to check them against (target-checks.ts). */
  targets?: TargetCatalogue | undefined;
  /** With isolation: the jobs in force (isolate.ts RunningJobs). */
  running?: RunningJobs | undefined;
}

/** A job looked up by name, with its connection resolved. */
export interface ResolvedJob {
  name: string;
  job: JobConfig;
  connection: ConnectionConfig;
  connectionName: string;
  /** IANA zone of its schedule and logical time: its own `timezone`, else its connection's. */
  zone: string;
  /** How long its attempts' pages are kept: its target's `archive`, else its connection's, else the defaults'. */
  archive?: ArchiveConfig | undefined;
  /**
   * The run's mandant and its target column, for the run subject of one mandant of a list job (mandants.ts); its
   * `job.report.mandant` is then that mandant alone.
   */
  mandant?: MandantOfRun | undefined;
}

/** sha256 of a jobs.yaml text, hex. */
export function textHash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * Reads and validates a jobs.yaml. Problems read `file:line:col: yaml.path: what is wrong (how to fix)`.
 * @param path shown in problems as given
 * @throws ConfigError listing every problem; also when the file cannot be read
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
  return configFromText(text, path, env, options);
}

/** {@link loadConfig} of a text already read. */
export function configFromText(
  text: string,
  path: string,
  env: NodeJS.ProcessEnv,
  options: LoadOptions = {},
): LoadedConfig {
  const hash = textHash(text);
  if (options.isolate) return { path, hash, ...validateConfigIsolated(text, path, env, options.running) };
  return { path, config: validateConfigText(text, path, env, { targets: options.targets }), hash, invalid: [] };
}

/**
 * The target tables a jobs.yaml names (schema defaulted, each once), valid job or not: what `report-etl validate`
 * reads from PostgreSQL's catalogue.
 * @returns none when the file cannot be read or parsed (loading it says why)
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
 * Validates jobs.yaml text strictly: any problem fails the whole file.
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

/** What a valid config allows but is probably wrong, one line each (`validate` prints them and exits 0). */
export function configWarnings(cfg: EtlConfig, file = 'jobs.yaml', targets?: TargetCatalogue): string[] {
  const out: string[] = [];
  for (const [name, c] of Object.entries(cfg.connections)) {
    if (c.auth !== 'authorization_code' || !c.redirectUri) continue;
    const host = new URL(c.redirectUri).hostname.replace(/^\[|\]$/g, '');
    if (/^(localhost|.*\.localhost|::1|127\..*|0\.0\.0\.0)$/.test(host))
      out.push(
        `${file}: connections.${name}.redirectUri: ${c.redirectUri} is on this machine: the ERP server must reach ` +
          'the redirect URI (docs/report-export-service.md "User-dependent service user" step 1: localhost is ' +
          'generally not possible); use a host name the browser and the server can reach, or finish each login ' +
          'by pasting the redirected URL (`report-etl login --redirected-url`)',
      );
  }
  out.push(...targetWarnings(cfg, file, targets));
  return out;
}

/**
 * Looks a job up by name and resolves its connection.
 * @throws ConfigError `unknown job "x" in jobs.yaml (known: a, b)`, with a "did you mean" when close
 */
export function resolveJob(cfg: EtlConfig, name: string, file = 'jobs.yaml'): ResolvedJob {
  const subject = parseSubject(name);
  const base = subject.job;
  const listed = Object.hasOwn(cfg.jobs, base) ? cfg.jobs[base] : undefined;
  if (!listed) throw new ConfigError([unknownName('job', base, Object.keys(cfg.jobs), file)]);
  const connection = cfg.connections[listed.connection];
  if (!connection)
    throw new ConfigError([`${file}: jobs.${base}.connection: unknown connection "${listed.connection}"`]);
  const archive = listed.target.archive ?? connection.archive ?? cfg.defaults.archive;
  let job = listed;
  let mandant: MandantOfRun | undefined;
  if (subject.mandant !== undefined) {
    const list = mandantList(listed);
    if (!list?.includes(subject.mandant))
      throw new ConfigError([
        `${file}: jobs.${base}.report.mandant: ${subject.mandant} is not a mandant of job "${base}" ` +
          `(${list ? `its mandants: ${list.join(', ')}` : `it runs in mandant ${String(listed.report.mandant)} only`})`,
      ]);
    mandant = { value: subject.mandant, column: mandantColumnOf(listed) };
    job = { ...listed, report: { ...listed.report, mandant: String(subject.mandant) } };
  }
  return {
    name,
    job,
    connection,
    connectionName: listed.connection,
    zone: listed.timezone ?? connection.timezone,
    ...(archive ? { archive } : {}),
    ...(mandant ? { mandant } : {}),
  };
}

/** `unknown job "x" in jobs.yaml (did you mean "y"? known: a, b)`. */
export function unknownName(what: string, name: string, known: string[], file: string): string {
  const near = closestMatch(name, known);
  const hint = near ? `did you mean "${near}"? ` : '';
  return `unknown ${what} "${name}" in ${file} (${hint}known: ${known.join(', ') || 'none'})`;
}
