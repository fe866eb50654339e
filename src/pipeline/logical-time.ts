/**
 * The logical time of a run: the instants its `%{...}` templates (config/time-template.ts) render
 * (docs/configuration.md "Run parameters and logical time").
 */
import { cronTicks } from '../config/cron-ticks.ts';
import type { ResolvedJob } from '../config/load.ts';
import { renderParameters, renderTemplate, type LogicalTime } from '../config/time-template.ts';
import { ConfigError } from '../errors.ts';
import type { ReplaceRange } from '../warehouse/replace-range.ts';
import type { RunRequest } from '../vocabulary.ts';

export {
  addZonedDays,
  formatWithOffset,
  formatZoned,
  hasTemplate,
  parseZonedDate,
  renderParameters,
  renderTemplate,
  type LogicalTime,
} from '../config/time-template.ts';

/**
 * The tick of `job`'s schedule before `at`, in the schedule's zone: the start of the interval a run ending at `at`
 * covers. Undefined for a job without a schedule (or without a tick in the last year).
 */
export function previousTick(job: ResolvedJob, at: Date): Date | undefined {
  return job.job.schedule ? cronTicks(job.job.schedule, job.zone).previous(at) : undefined;
}

/**
 * The logical time of a run, worked out here only: `logicalEnd` is the request's, else its tick, else `now` (a
 * manual run); `logicalStart` the request's, else the schedule's previous tick before `logicalEnd`, else
 * `logicalEnd` itself (a job without schedule covers no interval); `tick` the scheduled time, else `logicalEnd`.
 */
export function logicalTimeOf(
  job: ResolvedJob,
  req: Pick<RunRequest, 'scheduledFor' | 'logicalStart' | 'logicalEnd'>,
  now: Date,
): LogicalTime {
  const logicalEnd = new Date(req.logicalEnd ?? req.scheduledFor ?? now.toISOString());
  const logicalStart = req.logicalStart ? new Date(req.logicalStart) : (previousTick(job, logicalEnd) ?? logicalEnd);
  const tick = req.scheduledFor ? new Date(req.scheduledFor) : logicalEnd;
  return { tick, logicalStart, logicalEnd };
}

/**
 * The report parameters of a run: jobs.yaml's with their `%{...}` templates rendered in the job's zone for the
 * run's logical time, then the request's explicit parameters on top (docs/configuration.md "Run parameters and logical
 * time").
 * @throws ConfigError naming the parameter for an unknown time name
 */
export function runParameters(
  job: ResolvedJob,
  req: Pick<RunRequest, 'scheduledFor' | 'logicalStart' | 'logicalEnd' | 'parameters'>,
  now: Date,
): Record<string, string> {
  const rendered = renderParameters(
    job.job.report.parameters,
    logicalTimeOf(job, req, now),
    job.zone,
    `jobs.${job.name}.report.parameters`,
  );
  return { ...rendered, ...req.parameters };
}

/**
 * The period a run replaces: jobs.yaml's `target.replaceRange` with its `from` and `to` templates rendered in the
 * job's zone for the run's logical time (docs/loaded-tables.md "Replacing one period"); undefined without one.
 * @throws ConfigError naming the bound for an unknown time name or a malformed offset
 */
export function runRange(job: ResolvedJob, time: LogicalTime): ReplaceRange | undefined {
  const r = job.job.target.replaceRange;
  if (!r) return undefined;
  const problems: string[] = [];
  const render = (bound: 'from' | 'to') =>
    renderTemplate(r[bound], time, job.zone, (text) =>
      problems.push(`jobs.${job.name}.target.replaceRange.${bound}: ${text}`),
    );
  const range = { column: r.column, from: render('from'), to: render('to') };
  if (problems.length) throw new ConfigError(problems);
  return range;
}
