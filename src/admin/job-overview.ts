/**
 * The state of each jobs.yaml job for the jobs overview, the first that applies: `invalid` (jobs.yaml problems keep it
 * from running), `login_required` (its last attempt failed with LOGIN_REQUIRED), `failing` (its last finished attempt
 * failed), `stale` (its last success is older than its freshness), `never_run`, `healthy`.
 */
import { freshnessOf, staleness } from '../alerts/freshness.ts';
import { LOGIN_REQUIRED } from '../alerts/run-alerts.ts';
import { cronTicks } from '../config/cron-ticks.ts';
import type { InvalidEntry } from '../config/isolate.ts';
import { scheduleZone } from '../config/job-zone.ts';
import type { EtlConfig } from '../config/schema.ts';
import type { JobHealth, RecentAttempt } from '../history/job-health.ts';
import { subjectsOfJob } from '../config/mandants.ts';

/** What the overview says about a job. */
export type JobState = 'healthy' | 'failing' | 'stale' | 'invalid' | 'login_required' | 'never_run';

/** How each state reads on the page. */
export const STATE_LABELS: Record<JobState, string> = {
  healthy: 'healthy',
  failing: 'failing now',
  stale: 'stale',
  invalid: 'invalid config',
  login_required: 'login required',
  never_run: 'never run',
};

/** One line of the overview. */
export interface JobOverview {
  job: string;
  state: JobState;
  /** jobs.yaml problems of an invalid job (file:line: what, how to fix). */
  problems: string[];
  /** `schedule (zone)`, when scheduled. */
  schedule?: string | undefined;
  /** The job's time zone (its schedule's), for its times on the page; undefined for an invalid job (UTC). */
  zone?: string | undefined;
  nextTick?: Date | undefined;
  /** The freshness as written (`26h`). */
  freshness?: string | undefined;
  health: JobHealth;
  /** The failure to replay: the last failure while the job is failing. */
  failure?: RecentAttempt | undefined;
  /** A last failure that a later success superseded. */
  superseded?: RecentAttempt | undefined;
  /** A run of the job waits for a report slot on its connection (docs/architecture.md "A fleet"). */
  waitingForSlot?: SlotWait | undefined;
}

/** How busy a connection's report slots are, for a job with a run waiting for one. */
export interface SlotWait {
  connection: string;
  /** Slots held now, and the connection's maxConcurrentReports. */
  held: number;
  limit: number;
  /** Runs of any job waiting for a slot on the connection. */
  waiting: number;
}

/** The first tick of `schedule` after `now`, or undefined (none, or a bad expression). */
function nextTick(schedule: string, zone: string, now: Date): Date | undefined {
  try {
    return cronTicks(schedule, zone).next(now);
  } catch {
    return undefined;
  }
}

const finished = (a: RecentAttempt) => a.finished_at ?? a.started_at;

/**
 * The overview of every job: the valid ones of `config`, then the invalid ones, by name.
 * @param health from jobHealth() for those jobs (any order)
 * @param seen when each job's freshness was first checked (etl.job_alerts.first_seen)
 * @param slotWaits the jobs with a run waiting for a report slot, and their connection's slots
 */
export function buildOverview(
  config: EtlConfig,
  invalid: InvalidEntry[],
  health: JobHealth[],
  now: Date,
  seen: Map<string, Date> = new Map(),
  slotWaits: ReadonlyMap<string, SlotWait> = new Map(),
): JobOverview[] {
  const byJob = new Map(health.map((h) => [h.job, h]));
  const none = { last: undefined, lastSuccess: undefined, lastFailure: undefined, failingSince: undefined };
  const healthOf = (job: string): JobHealth => byJob.get(job) ?? { job, ...none, recent: [] };
  const out: JobOverview[] = [];
  const subjects = Object.entries(config.jobs)
    .sort(([a], [b]) => a.localeCompare(b))
    .flatMap(([name, j]) => subjectsOfJob(name, j).map((s) => [s.name, j] as const));
  // A job with many mandants is one row per mandant (config/mandants.ts), in the order of its list.
  for (const [job, j] of subjects) {
    const h = healthOf(job);
    const zone = scheduleZone(config, j);
    const f = freshnessOf(config, job);
    const lastFinished = h.recent.at(-1);
    const failingNow = lastFinished !== undefined && lastFinished.status === 'failed';
    const success = h.lastSuccess;
    const stale = f ? staleness(success ? finished(success) : undefined, seen.get(job), f.ms, now).stale : false;
    let state: JobState = 'healthy';
    if (failingNow && lastFinished.error_kind === LOGIN_REQUIRED) state = 'login_required';
    else if (failingNow) state = 'failing';
    else if (stale) state = 'stale';
    else if (!h.last) state = 'never_run';
    // The same rule as replay --failed (history/superseded.ts): never for append, never by an older logical run.
    const superseded = h.lastFailure?.superseded_by_run_key ? h.lastFailure : undefined;
    out.push({
      job,
      state,
      problems: [],
      schedule: j.schedule ? `${j.schedule} (${zone})` : undefined,
      zone,
      nextTick: j.schedule ? nextTick(j.schedule, zone, now) : undefined,
      freshness: f?.text,
      health: h,
      failure: failingNow ? h.lastFailure : undefined,
      superseded,
      waitingForSlot: slotWaits.get(job),
    });
  }
  for (const e of invalid.filter((i) => i.kind === 'job').sort((a, b) => a.name.localeCompare(b.name))) {
    // Its schedule as written, with no next tick: the scheduler does not run a job while it is invalid.
    out.push({ job: e.name, state: 'invalid', problems: e.problems, schedule: e.schedule, health: healthOf(e.name) });
  }
  return out;
}
