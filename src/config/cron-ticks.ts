/**
 * Cron ticks as instants, from cron-parser in the job's zone. node-cron, which schedules the running ticks, checks
 * the expression too, so that one either refuses never reaches the scheduler.
 */
import { CronExpressionParser } from 'cron-parser';
import { parse } from 'node-cron';
import { ConfigError } from '../errors.ts';

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

function makeCronTicks(schedule: string, timezone: string): CronTicks {
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
  return {
    schedule,
    timezone,
    stepMs,
    matches(instant) {
      const t = floor(instant.getTime());
      return (
        at(t - 1)
          .next()
          .getTime() === t
      );
    },
    between(from, to, limit = MAX_TICKS) {
      const found: Date[] = [];
      let truncated = false;
      // Newest first, so that a limit keeps the most recent ticks; returned oldest first.
      const cursor = at(floor(to.getTime()) + 1);
      for (;;) {
        if (!cursor.hasPrev()) break;
        const t = cursor.prev().getTime();
        if (t <= from.getTime()) break;
        if (found.length >= limit) {
          truncated = true;
          break;
        }
        found.push(new Date(t));
      }
      return { ticks: found.reverse(), truncated };
    },
    previous(tick) {
      const cursor = at(floor(tick.getTime() - 1) + 1);
      if (!cursor.hasPrev()) return undefined;
      const t = cursor.prev().getTime();
      return t < tick.getTime() ? new Date(t) : undefined;
    },
    next(instant) {
      const cursor = at(instant.getTime());
      return cursor.hasNext() ? new Date(cursor.next().getTime()) : undefined;
    },
  };
}
