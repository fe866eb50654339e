/**
 * Cron ticks as instants, from cron-parser in the job's zone. node-cron, which schedules the running ticks, checks
 * the expression too, so that one either refuses never reaches the scheduler. A local time the zone repeats (the hour
 * its clocks go back) has one tick, the first (docs/configuration.md "Run parameters and logical time").
 */
import { CronExpressionParser } from 'cron-parser';
import { parse } from 'node-cron';
import { ConfigError } from '../errors.ts';
import { makeZoneOffset } from '../zone-offset.ts';

/** Most ticks {@link CronTicks.between} returns (`* * * * * *` over a year). */
export const MAX_TICKS = 10_000;

/** Ticks of one schedule in one time zone. */
export interface CronTicks {
  readonly schedule: string;
  readonly timezone: string;
  /** Step of the scan in ms: 1000 when the pattern names seconds, else 60 000. */
  readonly stepMs: number;
  /** Whether `at` (truncated to the step) is a tick. */
  matches(at: Date): boolean;
  /**
   * Whether the zone's local time at `instant` came once before: the hour it repeats when its clocks go back. node-cron
   * fires there a second time; it is no tick.
   */
  repeats(instant: Date): boolean;
  /**
   * The first instant of the zone's local time at `instant`: `instant` itself, or where {@link repeats} holds, the
   * same local time an offset change earlier (02:15 CET on the day the clocks go back: 02:15 CEST, an hour earlier).
   */
  firstOf(instant: Date): Date;
  /** Ticks t with from < t <= to, oldest first, at most `limit`; `truncated`: older ones were left out. */
  between(from: Date, to: Date, limit?: number): { ticks: Date[]; truncated: boolean };
  /** The last tick strictly before `tick`. */
  previous(tick: Date): Date | undefined;
  /** The first tick strictly after `instant`. */
  next(instant: Date): Date | undefined;
}

/**
 * The ticks of a cron expression (5 fields, or 6 with seconds first) read in an IANA zone; cached.
 * @throws ConfigError when node-cron or cron-parser rejects the expression
 */
export function cronTicks(schedule: string, timezone: string): CronTicks {
  const key = `${schedule}@${timezone}`;
  let ticks = CACHE.get(key);
  if (!ticks) {
    ticks = makeCronTicks(schedule, timezone);
    if (CACHE.size >= CACHE_SIZE) CACHE.delete(CACHE.keys().next().value!);
    CACHE.set(key, ticks);
  }
  return ticks;
}

const CACHE_SIZE = 256;
const CACHE = new Map<string, CronTicks>();

/** The fields of a cron expression with their ranges, 5 fields or 6 with seconds first. */
const FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12 },
  { name: 'day of week', min: 0, max: 7 },
] as const;
const SECOND = { name: 'second', min: 0, max: 59 } as const;

/**
 * What is out of range in `schedule`'s numbers and steps, checked here because node-cron reads some of them as
 * something else (a step of 61 in the minute field as every hour); names (`mon`, `jan`) are left to the parsers.
 * @returns one sentence per problem, none when every number is in range
 */
export function cronRangeProblems(schedule: string): string[] {
  const parts = schedule.trim().split(/\s+/);
  const fields = parts.length === 6 ? [SECOND, ...FIELDS] : parts.length === 5 ? FIELDS : undefined;
  if (!fields) return [];
  const problems: string[] = [];
  parts.forEach((part, i) => {
    const f = fields[i]!;
    for (const item of part.split(',')) {
      const [range = '', step] = item.split('/');
      if (step !== undefined) {
        const n = Number(step);
        const span = f.max - f.min + 1;
        if (!/^\d+$/.test(step) || n < 1 || n >= span)
          problems.push(
            `step "/${step}" of the ${f.name} field must be 1 to ${span - 1} (a step of ${span} or more matches only ` +
              `the first ${f.name}: write ${f.min} instead of */${step})`,
          );
      }
      for (const v of range.split('-'))
        if (/^\d+$/.test(v) && (Number(v) < f.min || Number(v) > f.max))
          problems.push(`${v} is not a ${f.name}: the ${f.name} field takes ${f.min} to ${f.max}`);
    }
  });
  return problems;
}

function makeCronTicks(schedule: string, timezone: string): CronTicks {
  const outOfRange = cronRangeProblems(schedule);
  if (outOfRange.length) throw new ConfigError([`invalid cron expression "${schedule}": ${outOfRange.join('; ')}`]);
  let fields: ReturnType<typeof parse>;
  try {
    fields = parse(schedule);
    CronExpressionParser.parse(schedule, { tz: timezone });
  } catch (err) {
    throw new ConfigError(
      [`invalid cron expression "${schedule}" (time zone ${timezone}): ${(err as Error).message}`],
      { cause: err },
    );
  }
  const stepMs = fields.second.length === 1 && fields.second[0] === 0 ? 60_000 : 1_000;
  const floor = (ms: number) => Math.floor(ms / stepMs) * stepMs;
  /** The expression with its cursor at `ms`. */
  const at = (ms: number) => CronExpressionParser.parse(schedule, { tz: timezone, currentDate: new Date(ms) });
  const offset = makeZoneOffset(timezone);
  /**
   * How far the clocks went back before the local time at `ms` came again (they went back by `back` within 6 h, and
   * `ms - back` read the same), or 0 when it comes the first time.
   */
  const repeatedBy = (ms: number) => {
    const back = offset(ms - REPEAT_LOOKBACK_MS) - offset(ms);
    return back > 0 && offset(ms - back) - offset(ms) === back ? back : 0;
  };
  const repeats = (ms: number) => repeatedBy(ms) > 0;
  return {
    schedule,
    timezone,
    stepMs,
    matches(instant) {
      const t = floor(instant.getTime());
      const next = at(t - 1).next();
      return next.getTime() === t && !repeats(t);
    },
    repeats: (instant) => repeats(instant.getTime()),
    firstOf: (instant) => new Date(instant.getTime() - repeatedBy(instant.getTime())),
    between(from, to, limit = MAX_TICKS) {
      const found: Date[] = [];
      // Newest first, so that a limit keeps the most recent ticks; returned oldest first.
      const cursor = at(floor(to.getTime()) + 1);
      while (cursor.hasPrev()) {
        const t = cursor.prev().getTime();
        if (t <= from.getTime()) break;
        if (repeats(t)) continue;
        if (found.length >= limit) return { ticks: found.reverse(), truncated: true };
        found.push(new Date(t));
      }
      return { ticks: found.reverse(), truncated: false };
    },
    previous(tick) {
      const cursor = at(floor(tick.getTime() - 1) + 1);
      while (cursor.hasPrev()) {
        const t = cursor.prev().getTime();
        if (!repeats(t)) return t < tick.getTime() ? new Date(t) : undefined;
      }
      return undefined;
    },
    next(instant) {
      const cursor = at(instant.getTime());
      while (cursor.hasNext()) {
        const t = cursor.next().getTime();
        if (!repeats(t)) return new Date(t);
      }
      return undefined;
    },
  };
}

/** How far back a change of the zone's offset is looked for: no zone goes back by more than a few hours. */
const REPEAT_LOOKBACK_MS = 6 * 3_600_000;
