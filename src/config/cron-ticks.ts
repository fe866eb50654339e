/**
 * Cron ticks as instants: whether an instant is a tick of a schedule, the ticks in a range, and the tick before
 * a tick (the start of the logical interval a run stands for). node-cron decides what matches, in the job's time
 * zone, so this agrees with the running scheduler; node-cron has no "previous" or "between", hence the scan.
 */
import { createTask, parse } from 'node-cron';
import { ConfigError } from '../errors.ts';
import { makeZoneOffset } from '../zone-offset.ts';

/** Most ticks {@link CronTicks.between} returns (a guard against `* * * * * *` over a year). */
export const MAX_TICKS = 10_000;

/** How far back {@link CronTicks.previous} looks, in ms (a bit more than a year: yearly schedules work). */
const MAX_LOOKBACK_MS = 370 * 86_400_000;

/** Ticks of one schedule in one time zone. */
export interface CronTicks {
  readonly schedule: string;
  readonly timezone: string;
  /** Step of the scan in ms: 1000 when the pattern names seconds, else 60 000. */
  readonly stepMs: number;
  /** Whether `at` (truncated to the step) is a tick. */
  matches(at: Date): boolean;
  /**
   * Ticks t with from < t <= to, oldest first, at most `limit` (default {@link MAX_TICKS}); `truncated` says
   * whether older ticks were left out (the newest are kept).
   */
  between(from: Date, to: Date, limit?: number): { ticks: Date[]; truncated: boolean };
  /** The last tick strictly before `tick`, or undefined when there is none within about a year. */
  previous(tick: Date): Date | undefined;
}

/**
 * Makes the tick calculator of a schedule.
 * @param schedule cron expression, 5 fields or 6 with seconds first (node-cron syntax)
 * @param timezone IANA zone the expression is read in
 * @throws ConfigError when node-cron rejects the expression
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
  let task: ReturnType<typeof createTask>;
  let fields: ReturnType<typeof parse>;
  try {
    fields = parse(schedule);
    task = createTask(schedule, () => undefined, { timezone });
    // Only its matcher is used: destroying it takes it out of node-cron's global task registry (no leak).
    void task.destroy();
  } catch (err) {
    throw new ConfigError([`invalid cron expression "${schedule}" (time zone ${timezone}): ${(err as Error).message}`], { cause: err });
  }
  const stepMs = fields.second.length === 1 && fields.second[0] === 0 ? 60_000 : 1_000;
  const floor = (ms: number) => Math.floor(ms / stepMs) * stepMs;
  const second = new Set(fields.second);
  const minute = new Set(fields.minute);
  const hour = new Set(fields.hour);
  const month = new Set(fields.month);
  const offsetAt = makeZoneOffset(timezone);
  // A cheap necessary condition (second, minute, hour, month in local time) before node-cron's own match, which
  // formats the date with Intl and costs ~13 µs: a year of minutes is scanned in well under a second.
  const match = (t: number) => {
    const local = new Date(t + offsetAt(t));
    return (
      second.has(local.getUTCSeconds()) &&
      minute.has(local.getUTCMinutes()) &&
      hour.has(local.getUTCHours()) &&
      month.has(local.getUTCMonth() + 1) &&
      task.match(new Date(t))
    );
  };
  const matches = (at: Date) => match(floor(at.getTime()));
  return {
    schedule,
    timezone,
    stepMs,
    matches,
    between(from, to, limit = MAX_TICKS) {
      const found: Date[] = [];
      let truncated = false;
      // Scan newest first so that a limit keeps the most recent ticks, then return oldest first.
      for (let t = floor(to.getTime()); t > from.getTime(); t -= stepMs) {
        if (match(t)) {
          if (found.length >= limit) {
            truncated = true;
            break;
          }
          found.push(new Date(t));
        }
      }
      return { ticks: found.reverse(), truncated };
    },
    previous(tick) {
      const start = floor(tick.getTime() - 1);
      const stop = tick.getTime() - MAX_LOOKBACK_MS;
      for (let t = start; t > stop; t -= stepMs) {
        if (match(t)) return new Date(t);
      }
      return undefined;
    },
  };
}

