/**
 * Isolation of invalid jobs: each problem is attributed to the job, connection or alert target it is about; a job
 * with a problem, or whose connection has one, is left out, and so is a broken alert target. Only an unparseable
 * file or a problem elsewhere (top level, `defaults`, `history`) fails the whole file: it would change every job.
 */
import { ConfigError } from '../errors.ts';
import { checkConfigText, parseCoercing } from './check.ts';
import { formatPath } from './interpolate.ts';
import { get, isObj, type Located } from './problems.ts';
import { configSchema, type EtlConfig } from './schema.ts';

/** A job or alert target left out because it is invalid. */
export interface InvalidEntry {
  kind: 'job' | 'alert';
  name: string;
  /** Every problem of it, in file order. */
  problems: string[];
  /** An invalid job's `schedule` as written, when a string. */
  schedule?: string | undefined;
}

/** A config with its invalid jobs and alert targets left out. */
export interface IsolatedConfig {
  config: EtlConfig;
  /** Jobs first, each kind sorted by name. */
  invalid: InvalidEntry[];
  /** Each valid job as written (interpolated, before defaults), as JSON: what a later change is compared with. */
  writtenJobs: Record<string, string>;
  /** Jobs kept although a job the change brought writes their target otherwise; with the problem they would have. */
  keptRunning: InvalidEntry[];
}

/** The jobs of the config in force, as written (IsolatedConfig.writtenJobs). */
export type RunningJobs = { writtenJobs: Readonly<Record<string, string>> };

/**
 * Validates jobs.yaml text, isolating invalid jobs, connections and alert targets. Jobs that write one table
 * otherwise are each invalid, except one in `running` written as before: adding a job must not stop one that works.
 * @param running the jobs in force (a live reload)
 * @throws ConfigError when the text cannot be parsed, or with every problem when one is outside jobs, connections
 *   and alerts
 */
export function validateConfigIsolated(
  text: string,
  file: string,
  env: NodeJS.ProcessEnv = process.env,
  running?: RunningJobs,
): IsolatedConfig {
  const checked = checkConfigText(text, file, env);
  const byJob = new Map<string, Located[]>();
  const byConnection = new Map<string, Located[]>();
  const byAlert = new Map<string, Located[]>();
  const global: Located[] = [];
  const add = (m: Map<string, Located[]>, k: string, p: Located) => (m.get(k) ?? m.set(k, []).get(k)!).push(p);
  for (const p of checked.problems) {
    const [top, name] = p.path ?? [];
    if (typeof name !== 'string') global.push(p);
    else if (top === 'jobs') add(byJob, name, p);
    else if (top === 'connections') add(byConnection, name, p);
    else if (top === 'alerts') add(byAlert, name, p);
    else global.push(p);
  }
  if (global.length > 0) throw new ConfigError([...new Set(checked.problems.map((p) => p.text))]);

  const data = structuredClone(checked.data) as Record<string, unknown>;
  const jobs = isObj(data.jobs) ? data.jobs : {};
  const invalid: InvalidEntry[] = [];
  const keptRunning: InvalidEntry[] = [];
  const writtenJobs: Record<string, string> = {};
  for (const [name, job] of Object.entries(jobs)) {
    const connection = get(job, ['connection']);
    const own = byJob.get(name) ?? [];
    const viaConnection = typeof connection === 'string' ? (byConnection.get(connection) ?? []) : [];
    const written = JSON.stringify(job);
    const keep =
      own.length > 0 &&
      viaConnection.length === 0 &&
      own.every((p) => p.sharedTarget) &&
      running?.writtenJobs[name] === written;
    if (keep) keptRunning.push({ kind: 'job', name, problems: [...new Set(own.map((p) => p.text))] });
    if (keep || (own.length === 0 && viaConnection.length === 0)) {
      writtenJobs[name] = written;
      continue;
    }
    const problems = [...own, ...viaConnection].sort((a, b) => a.line - b.line || a.col - b.col).map((p) => p.text);
    const schedule = get(job, ['schedule']);
    invalid.push({
      kind: 'job',
      name,
      problems: [...new Set(problems)],
      schedule: typeof schedule === 'string' ? schedule : undefined,
    });
    delete jobs[name];
  }
  const connections = isObj(data.connections) ? data.connections : {};
  for (const name of byConnection.keys()) delete connections[name];
  const alerts = isObj(data.alerts) ? data.alerts : {};
  for (const [name, problems] of byAlert) {
    invalid.push({ kind: 'alert', name, problems: [...new Set(problems.map((p) => p.text))] });
    delete alerts[name];
  }
  const result = parseCoercing(configSchema, data, [], checked.interpolated);
  if (!result.success) {
    // Every problem was attributed, yet what is left does not validate: say all there is.
    const texts = checked.problems.map((p) => p.text);
    throw new ConfigError(
      texts.length
        ? [...new Set(texts)]
        : result.error.issues.map((i) => `${file}: ${formatPath(i.path as (string | number)[])}: ${i.message}`),
    );
  }
  invalid.sort((a, b) => (a.kind === b.kind ? a.name.localeCompare(b.name) : a.kind === 'job' ? -1 : 1));
  return { config: result.data, invalid, writtenJobs, keptRunning };
}

/** One line about an invalid entry: its first problem `(job "x" is skipped; 2 more problems: …)`. */
export function describeInvalid(e: InvalidEntry): string {
  const more = e.problems.length - 1;
  const what = e.kind === 'job' ? `job "${e.name}" is skipped` : `alert target "${e.name}" is not used`;
  const rest = more > 0 ? `; ${more} more problem${more === 1 ? '' : 's'}: report-etl validate lists them` : '';
  return `${e.problems[0] ?? e.name} (${what}${rest})`;
}
