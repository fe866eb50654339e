/**
 * What a command that needs no jobs.yaml reads from it anyway when it can (README "Commands": every command takes
 * `--config`): each job's time zone, to print its times in (time-text.ts). A missing default file is no problem;
 * an unreadable or invalid one given by name gets one warning line and times in UTC.
 */
import { ConfigError } from '../errors.ts';
import type { Cli } from './types.ts';
import { subjectZone } from '../config/job-zone.ts';
import type { EtlConfig } from '../config/schema.ts';

/** A job's IANA zone by name, undefined for a job jobs.yaml does not have. */
export type ZoneOf = (job: string) => string | undefined;

/**
 * The zones of the jobs and run subjects of `config` (config/job-zone.ts: a job's own `timezone`, else its
 * connection's, else UTC); none without a config.
 */
export function zonesOf(config: EtlConfig | undefined): ZoneOf {
  return (subject) => subjectZone(config, subject);
}

/**
 * The zones of the jobs of jobs.yaml at `path`, valid or not ({@link zonesOf}).
 * @param given whether `--config` or `REPORT_ETL_CONFIG` named the file: only then is a file that cannot be read
 *   worth a warning
 */
export async function jobZones(cli: Cli, path: string, given: boolean): Promise<ZoneOf> {
  const { loadConfig } = await import('../config/load.ts');
  try {
    return zonesOf((await loadConfig(path, process.env, { isolate: true })).config);
  } catch (err) {
    const missing = err instanceof ConfigError && (err.cause as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
    if (given || !missing)
      cli.err(`warning: ${(err as Error).message.split('\n')[0]}; times are printed in UTC (${path} only gives zones)`);
    return () => undefined;
  }
}

/** Whether the `--config` value was given (option or REPORT_ETL_CONFIG) rather than the default `jobs.yaml`. */
export function configGiven(cmd: { getOptionValueSource(key: string): string | undefined }): boolean {
  const source = cmd.getOptionValueSource('config');
  return source === 'cli' || process.env.REPORT_ETL_CONFIG !== undefined;
}
