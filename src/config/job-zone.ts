/**
 * A job's time zone (docs/configuration.md `timezone`): the zone its schedule's cron fields are read in, and the one
 * its runs' times are printed in by the commands, the admin pages and the alerts (time-text.ts).
 */
import { jobOfSubject } from './mandants.ts';
import type { EtlConfig, JobConfig } from './schema.ts';

/** The zone of a job's schedule: its own `timezone`, else its connection's, else UTC. An IANA name. */
export function scheduleZone(cfg: EtlConfig, job: JobConfig): string {
  return job.timezone ?? cfg.connections[job.connection]?.timezone ?? 'UTC';
}

/**
 * The zone of a run subject (`job`, or `job[mandant]` of a job with a mandant list) in `cfg`: its job's
 * {@link scheduleZone}; undefined (the caller prints UTC) without a config or for a subject it no longer has.
 */
export function subjectZone(cfg: EtlConfig | undefined, subject: string): string | undefined {
  const job = cfg && jobOfSubject(cfg, subject);
  return cfg && job ? scheduleZone(cfg, job) : undefined;
}
