/**
 * Logical time of a run in report parameters.
 *
 * A parameter value in jobs.yaml may contain `%{name}` or `%{name:format}` where name is
 * - `tick`: the scheduled time the run stands for,
 * - `logicalStart`: the previous tick of the schedule (start of the interval the run covers),
 * - `logicalEnd`: the tick itself (end of the interval, exclusive),
 * and format is built from `yyyy MM dd HH mm ss SSS` (other characters are copied; text in single quotes is
 * copied verbatim), rendered in the job's time zone. Without a format the value is ISO 8601 UTC with ms.
 * `%%{` writes a literal `%{`. Example: `FROM: "%{logicalStart:yyyy-MM-dd}"`, `TO: "%{logicalEnd:yyyy-MM-dd}"`.
 *
 * The syntax is `%{...}`, not `${...}`, because the config loader interpolates `${VAR}` from the environment
 * when it reads jobs.yaml; templates are rendered by the worker when the run starts.
 */
import { cronTicks } from '../config/cron-ticks.ts';
import type { ResolvedJob } from '../config/load.ts';
import { ConfigError } from '../errors.ts';
import { formatWithOffset } from '../time-text.ts';
import type { RunRequest } from '../vocabulary.ts';

/** The instants a template can refer to. */
export interface LogicalTime {
  tick: Date;
  logicalStart: Date;
  logicalEnd: Date;
}

const TEMPLATE = /%(%?)\{([A-Za-z]+)(?::([^}]*))?\}/g;
const NAMES = new Set(['tick', 'logicalStart', 'logicalEnd']);
const TOKENS = /yyyy|MM|dd|HH|mm|ss|SSS|'[^']*'/g;

/** Whether a value contains a `%{...}` template. */
export function hasTemplate(value: string): boolean {
  TEMPLATE.lastIndex = 0;
  for (const m of value.matchAll(TEMPLATE)) if (m[1] === '') return true;
  return false;
}

/** Wall-clock parts of `at` in `zone`. */
function zonedParts(at: Date, zone: string): Record<'yyyy' | 'MM' | 'dd' | 'HH' | 'mm' | 'ss' | 'SSS', string> {
  const p: Record<string, string> = {};
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  for (const part of format.formatToParts(at)) if (part.type !== 'literal') p[part.type] = part.value;
  return {
    yyyy: p.year!.padStart(4, '0'),
    MM: p.month!,
    dd: p.day!,
    HH: p.hour!,
    mm: p.minute!,
    ss: p.second!,
    SSS: String(at.getUTCMilliseconds()).padStart(3, '0'),
  };
}

/**
 * Formats `at` in `zone` with a `yyyy-MM-dd HH:mm:ss.SSS`-style pattern (see the module doc).
 * @throws RangeError for an unknown zone
 */
export function formatZoned(at: Date, pattern: string, zone: string): string {
  const parts = zonedParts(at, zone);
  return pattern.replace(TOKENS, (t) => (t.startsWith("'") ? t.slice(1, -1) : parts[t as keyof typeof parts]));
}

/** `at` as wall time in `zone` with its UTC offset: time-text.ts formatWithOffset, kept here for its callers. */
export { formatWithOffset };

/**
 * Renders the templates of every parameter value.
 * @param parameters report parameters from jobs.yaml, name to value
 * @param time the run's logical time
 * @param zone IANA zone the formats are rendered in (the job's schedule zone)
 * @param where `jobs.<name>.report.parameters`, for error messages
 * @returns a new object with every `%{...}` replaced
 * @throws ConfigError naming the parameter for an unknown name (e.g. `%{logicalstart}`)
 */
export function renderParameters(
  parameters: Record<string, string>,
  time: LogicalTime,
  zone: string,
  where = 'report.parameters',
): Record<string, string> {
  const out: Record<string, string> = {};
  const problems: string[] = [];
  for (const [key, value] of Object.entries(parameters)) {
    out[key] = value.replace(TEMPLATE, (whole, escaped: string, name: string, format: string | undefined) => {
      if (escaped) return whole.slice(1);
      if (!NAMES.has(name)) {
        problems.push(
          `${where}.${key}: unknown time "%{${name}}" in "${value}" (write tick, logicalStart or logicalEnd)`,
        );
        return whole;
      }
      const at = time[name as keyof LogicalTime];
      return format === undefined || format === '' ? at.toISOString() : formatZoned(at, format, zone);
    });
  }
  if (problems.length) throw new ConfigError(problems);
  return out;
}

/**
 * Parses a `--from`/`--to` date of the command line: a date `2026-01-31` is midnight in `zone`; a date and time
 * without offset `2026-01-31T06:00` is wall time in `zone`; anything with `Z` or an offset is taken as is.
 * @throws ConfigError when the text is not a date
 */
export function parseZonedDate(text: string, zone: string): Date {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?$/.exec(text.trim());
  if (!m) {
    const d = new Date(text);
    if (Number.isNaN(d.getTime()))
      throw new ConfigError([`not a date: "${text}" (write 2026-01-31, 2026-01-31T06:00 or an ISO time with offset)`]);
    return d;
  }
  const wall = Date.UTC(
    Number(m[1]),
    Number(m[2]) - 1,
    Number(m[3]),
    Number(m[4] ?? 0),
    Number(m[5] ?? 0),
    Number(m[6] ?? 0),
  );
  // Two rounds settle the offset also next to a DST change.
  let t = wall;
  for (let i = 0; i < 2; i++) {
    const p = zonedParts(new Date(t), zone);
    const seen = Date.UTC(Number(p.yyyy), Number(p.MM) - 1, Number(p.dd), Number(p.HH), Number(p.mm), Number(p.ss));
    t += wall - seen;
  }
  return new Date(t);
}

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
  const why = chosen
    ? 'the one --logical-time ends'
    : `the latest complete interval of "${schedule}"; --logical-time chooses another`;
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
