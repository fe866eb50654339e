/**
 * Many mandants (docs/loaded-tables.md "Many mandants"): a job whose `report.mandant` is a list runs once per mandant
 * and tick. Each mandant's run is its own logical run, named by the job's **run subject** `<job>[<mandant>]`
 * (`sales_orders[8888]`): that name is the queue's, the run history's, the overlap lock's, the alerts' and the admin
 * pages' job of the run, and its scheduled run key is `<job>[<mandant>]__<tick>`. A job with a single mandant keeps its
 * plain name and today's run keys. Job names are `[A-Za-z0-9_.-]+`, so a subject never clashes with a job name.
 */
import { ConfigError } from '../errors.ts';
import type { EtlConfig, JobConfig } from './schema.ts';

/** The target column of a list job's mandant when `target.mandantColumn` is not set. */
export const DEFAULT_MANDANT_COLUMN = 'mandant';

/** A run of one mandant of a list job: the mandant and the target column (integer) that holds it. */
export interface MandantOfRun {
  value: number;
  column: string;
}

/** The job's list of mandants, or undefined for a job with one mandant (today's shape). */
export function mandantList(job: JobConfig): readonly number[] | undefined {
  return Array.isArray(job.report.mandant) ? job.report.mandant : undefined;
}

/** The target column of the mandant of a list job: `target.mandantColumn`, else {@link DEFAULT_MANDANT_COLUMN}. */
export function mandantColumnOf(job: JobConfig): string {
  return job.target.mandantColumn ?? DEFAULT_MANDANT_COLUMN;
}

/** The run subject of `mandant` of job `job`: `sales_orders[8888]`. */
export function subjectName(job: string, mandant: number): string {
  return `${job}[${mandant}]`;
}

/** A run subject split: the jobs.yaml job and, for a list job's run, its mandant. */
export function parseSubject(name: string): { job: string; mandant?: number } {
  const m = /^(.+)\[([0-9]{1,15})\]$/.exec(name);
  return m ? { job: m[1]!, mandant: Number(m[2]) } : { job: name };
}

/** One run subject of a config: what the scheduler ticks and the overview shows. */
export interface RunSubject {
  /** `sales_orders` or `sales_orders[8888]`. */
  name: string;
  /** The jobs.yaml job's name. */
  job: string;
  mandant?: number | undefined;
}

/** The run subjects of one job: its name alone, or one per mandant of its list in the list's order. */
export function subjectsOfJob(name: string, job: JobConfig): RunSubject[] {
  const list = mandantList(job);
  return list ? list.map((m) => ({ name: subjectName(name, m), job: name, mandant: m })) : [{ name, job: name }];
}

/** Every run subject of a config, job by job. */
export function runSubjects(cfg: EtlConfig): RunSubject[] {
  return Object.entries(cfg.jobs).flatMap(([name, job]) => subjectsOfJob(name, job));
}

/**
 * The jobs.yaml job of a run subject (or of a job name), undefined when the config has none: an unknown job, or a
 * mandant the job no longer lists.
 */
export function jobOfSubject(cfg: EtlConfig, name: string): JobConfig | undefined {
  const { job, mandant } = parseSubject(name);
  const found = Object.hasOwn(cfg.jobs, job) ? cfg.jobs[job] : undefined;
  if (!found) return undefined;
  const list = mandantList(found);
  if (mandant === undefined) return list ? undefined : found;
  return list?.includes(mandant) ? found : undefined;
}

/**
 * Picks the run subjects of a command's `--mandant` values (docs/loaded-tables.md "Many mandants"): none given, every
 * mandant of the job (or the job itself for a single mandant).
 * @throws ConfigError naming the job's list for a mandant it does not list, or for --mandant on a job with one mandant
 */
export function chooseSubjects(name: string, job: JobConfig, given: readonly string[] | undefined): RunSubject[] {
  const all = subjectsOfJob(name, job);
  const wanted = (given ?? []).flatMap((g) => g.split(',')).map((g) => g.trim());
  if (wanted.length === 0) return all;
  const list = mandantList(job);
  if (!list)
    throw new ConfigError([
      `--mandant: job "${name}" runs in its one mandant ${String(job.report.mandant)}; --mandant applies to jobs ` +
        'with a list under report.mandant: leave it out',
    ]);
  return wanted.map((w) => {
    const m = /^[0-9]+$/.test(w) ? Number(w) : NaN;
    const found = all.find((s) => s.mandant === m);
    if (!found)
      throw new ConfigError([
        `--mandant ${w}: not a mandant of job "${name}" (its mandants: ${list.join(', ')}); give one of them, or ` +
          'leave --mandant out for all',
      ]);
    return found;
  });
}

/**
 * The mandant a run's report request is sent for: the job's one mandant, or the one its run subject names.
 * @throws ConfigError for a list job's run without a mandant (a run is of one mandant of the list)
 */
export function requestMandant(name: string, job: JobConfig): string {
  if (!Array.isArray(job.report.mandant)) return job.report.mandant;
  throw new ConfigError([
    `job "${name}" has a list of mandants (${job.report.mandant.join(', ')}): a run is of one of them, e.g. ` +
      `"${subjectName(name, job.report.mandant[0]!)}" (docs/loaded-tables.md "Many mandants")`,
  ]);
}
