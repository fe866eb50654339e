/**
 * The logical time of a run: the instants its `%{...}` templates (config/time-template.ts) render
 * (docs/configuration.md "Run parameters and logical time").
 */
import { cronTicks } from '../config/cron-ticks.ts';
import type { ResolvedJob } from '../config/load.ts';
import { renderParameters, renderTemplate, type LogicalTime } from '../config/time-template.ts';
import { ConfigError } from '../errors.ts';
import type { AttemptStart } from '../history/attempts.ts';
import type { ReplaceRange } from '../warehouse/replace-range.ts';
import type { RunRequest } from '../vocabulary.ts';

export { formatWithOffset } from '../time-text.ts';
export {
  addZonedDays,
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
 * The interval a run by hand stands for (docs/configuration.md "Run parameters and logical time"), as Airflow's
 * manual runs do: without `chosen`, the latest complete interval of the job's schedule at `now` (for `15 2 * * *` at
 * 22:40, from 02:15 yesterday to 02:15 today); with `chosen` (`--logical-time`), the interval ending at it. A job
 * without a schedule covers no interval: both ends are `chosen`, else `now`.
 */
export function manualInterval(job: ResolvedJob, now: Date, chosen?: Date): { logicalStart: Date; logicalEnd: Date } {
  const logicalEnd = chosen ?? previousTick(job, now) ?? now;
  return { logicalStart: previousTick(job, logicalEnd) ?? logicalEnd, logicalEnd };
}

/**
 * The interval `(logicalStart, logicalEnd]` as one line, each end by `format` (time-text.ts formatTime), with what
 * chose it: `(2026-11-24 02:15:00+01:00, 2026-11-25 02:15:00+01:00], the latest complete interval of "15 2 * * *"`.
 * @param chosen whether `--logical-time` chose it
 */
export function describeInterval(
  job: ResolvedJob,
  interval: { logicalStart: Date; logicalEnd: Date },
  chosen: boolean,
  format: (t: Date) => string,
): string {
  const { logicalStart, logicalEnd } = interval;
  const schedule = job.job.schedule;
  if (logicalStart.getTime() === logicalEnd.getTime())
    return `logical time ${format(logicalEnd)} (no schedule, so no interval)`;
  let why = `the latest complete interval of "${schedule}"; --logical-time chooses another`;
  if (chosen) {
    // A --logical-time between two ticks still ends the interval: say so, and which tick ends the period meant.
    const ticks = cronTicks(schedule!, job.zone);
    const onTick = ticks.previous(new Date(logicalEnd.getTime() + 1))?.getTime() === logicalEnd.getTime();
    const next = onTick ? undefined : ticks.next(logicalEnd);
    why = next
      ? `the one --logical-time ends, which is no tick of "${schedule}" (the next is ${format(next)}: give it ` +
        "for that tick's period)"
      : 'the one --logical-time ends';
  }
  return `interval (${format(logicalStart)}, ${format(logicalEnd)}], ${why}`;
}

/**
 * The logical time of a run, worked out here only: `logicalEnd` is the request's, else its tick, else (a manual run
 * without one) the end of the schedule's latest complete interval ({@link manualInterval}; `now` without schedule);
 * `logicalStart` the request's, else the schedule's previous tick before `logicalEnd`, else `logicalEnd` itself (a
 * job without schedule covers no interval); `tick` the scheduled time, else `logicalEnd`.
 */
export function logicalTimeOf(
  job: ResolvedJob,
  req: Pick<RunRequest, 'scheduledFor' | 'logicalStart' | 'logicalEnd'>,
  now: Date,
): LogicalTime {
  const given = req.logicalEnd ?? req.scheduledFor;
  const logicalEnd = given ? new Date(given) : manualInterval(job, now).logicalEnd;
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
 * job's zone for the run's logical time (docs/loaded-tables.md "Replacing one period"); undefined without one. The
 * bounds carry no zone: the load reads them in the connection's, as the ERP reads the report's parameters
 * (docs/loaded-tables.md "Bounds and time zones").
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

/**
 * The interval an attempt of `job` stands for, as etl.attempts.request keeps it (ISO 8601 UTC), and with
 * target.replaceRange the period it replaces ({@link runRange}), which decides which later runs supersede a failure of
 * it (history/superseded.ts). A period whose bound does not render is left out: the attempt fails on it, recorded.
 */
export function attemptInterval(job: ResolvedJob, time: LogicalTime): NonNullable<AttemptStart['interval']> {
  let replaceRange: ReplaceRange | undefined;
  try {
    replaceRange = runRange(job, time);
  } catch {
    replaceRange = undefined;
  }
  return {
    logicalStart: time.logicalStart.toISOString(),
    logicalEnd: time.logicalEnd.toISOString(),
    tick: time.tick.toISOString(),
    replaceRange,
  };
}
