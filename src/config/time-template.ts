/**
 * Templates of a run's logical time in jobs.yaml values (the run's logical time itself: pipeline/logical-time.ts).
 *
 * A parameter value in jobs.yaml (and a `target.replaceRange` bound) may contain `%{name}`, `%{name:format}`,
 * `%{name-7d}` or `%{name-7d:format}` where name is
 * - `tick`: the scheduled time the run stands for,
 * - `logicalStart`: the previous tick of the schedule (start of the interval the run covers),
 * - `logicalEnd`: the tick itself (end of the interval, exclusive),
 * an optional offset `+N` or `-N` with unit `d` (calendar days in the job's time zone: the same wall-clock time N days
 * earlier or later, also across a DST change), `h` or `min` (exact hours or minutes) moves it, and format is built
 * from `yyyy MM dd HH mm ss SSS` (other characters are copied; text in single quotes is copied verbatim), rendered in
 * the job's time zone. Without a format the value is ISO 8601 UTC with ms. `%%{` writes a literal `%{`. Example:
 * `FROM: "%{logicalEnd-7d:yyyy-MM-dd}"`, `TO: "%{logicalEnd:yyyy-MM-dd}"` (docs/configuration.md "Run parameters
 * and logical time").
 *
 * The syntax is `%{...}`, not `${...}`, because the config loader interpolates `${VAR}` from the environment
 * when it reads jobs.yaml; templates are rendered by the worker when the run starts.
 */
import { ConfigError } from '../errors.ts';

/** The instants a template can refer to. */
export interface LogicalTime {
  tick: Date;
  logicalStart: Date;
  logicalEnd: Date;
}

const TEMPLATE = /%(%?)\{([^}:]*)(?::([^}]*))?\}/g;
/** The part before the format: a name and an optional offset. */
const NAME_AND_OFFSET = /^([A-Za-z]+)(?:([+-])(\d{1,5})(d|h|min))?$/;
const UNIT_MS = { h: 3_600_000, min: 60_000 } as const;
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

/**
 * Renders the `%{...}` templates of one value (see the module doc).
 * @param time the run's logical time
 * @param zone IANA zone the formats and day offsets are rendered in (the job's schedule zone)
 * @param problem called with `what is wrong (how to fix)` per unknown name or malformed offset
 * @returns the value with every template replaced (a bad one left as written)
 */
export function renderTemplate(
  value: string,
  time: LogicalTime,
  zone: string,
  problem: (text: string) => void,
): string {
  return value.replace(TEMPLATE, (whole, escaped: string, head: string, format: string | undefined) => {
    if (escaped) return whole.slice(1);
    const m = NAME_AND_OFFSET.exec(head);
    if (!m) {
      problem(
        `malformed time "%{${head}}" in "${value}" (write a name and an optional offset, e.g. ` +
          '%{logicalEnd-7d:yyyy-MM-dd}; units d, h, min)',
      );
      return whole;
    }
    const [, name, sign, amount, unit] = m as unknown as [string, string, string?, string?, ('d' | 'h' | 'min')?];
    if (!NAMES.has(name)) {
      problem(`unknown time "%{${name}}" in "${value}" (write tick, logicalStart or logicalEnd)`);
      return whole;
    }
    let at = time[name as keyof LogicalTime];
    if (sign && amount && unit) {
      const n = Number(amount) * (sign === '-' ? -1 : 1);
      at = unit === 'd' ? addZonedDays(at, n, zone) : new Date(at.getTime() + n * UNIT_MS[unit]);
    }
    return format === undefined || format === '' ? at.toISOString() : formatZoned(at, format, zone);
  });
}

/** What is wrong with the `%{...}` templates of `value` (rendered for a sample time): none when they render. */
export function templateProblems(value: string): string[] {
  const problems: string[] = [];
  const at = new Date(0);
  renderTemplate(value, { tick: at, logicalStart: at, logicalEnd: at }, 'UTC', (text) => problems.push(text));
  return problems;
}

/** `value` rendered for a sample time (2026-01-31 02:15 UTC), to check what its templates give. */
export function renderSample(value: string): string {
  const at = new Date(Date.UTC(2026, 0, 31, 2, 15));
  return renderTemplate(value, { tick: at, logicalStart: at, logicalEnd: at }, 'UTC', () => undefined);
}

/**
 * `at` moved by `days` calendar days in `zone`: the same wall-clock time on the other day (a day across a DST change
 * is 23 or 25 hours long); a wall time that day does not have is read as the zone reads it (parseZonedDate).
 */
export function addZonedDays(at: Date, days: number, zone: string): Date {
  const wall = wallTime(zone, at) + days * 86_400_000;
  return new Date(settleWall(wall, zone) + at.getUTCMilliseconds());
}

/** The wall time of `at` in `zone` to the second, as the ms of a UTC date holding it. */
function wallTime(zone: string, at: Date): number {
  const p = zonedParts(at, zone);
  return Date.UTC(Number(p.yyyy), Number(p.MM) - 1, Number(p.dd), Number(p.HH), Number(p.mm), Number(p.ss));
}

/** The instant whose wall time in `zone` is `wall` (ms of a UTC date holding the wall time). */
function settleWall(wall: number, zone: string): number {
  // Two rounds settle the offset also next to a DST change.
  let t = wall;
  for (let i = 0; i < 2; i++) t += wall - wallTime(zone, new Date(t));
  return t;
}

/**
 * Renders the templates of every parameter value.
 * @param parameters report parameters from jobs.yaml, name to value
 * @param time the run's logical time
 * @param zone IANA zone the formats are rendered in (the job's schedule zone)
 * @param where `jobs.<name>.report.parameters`, for error messages
 * @returns a new object with every `%{...}` replaced
 * @throws ConfigError naming the parameter for an unknown name (e.g. `%{logicalstart}`) or a malformed offset
 */
export function renderParameters(
  parameters: Record<string, string>,
  time: LogicalTime,
  zone: string,
  where = 'report.parameters',
): Record<string, string> {
  const out: Record<string, string> = {};
  const problems: string[] = [];
  for (const [key, value] of Object.entries(parameters))
    out[key] = renderTemplate(value, time, zone, (text) => problems.push(`${where}.${key}: ${text}`));
  if (problems.length) throw new ConfigError(problems);
  return out;
}

/**
 * A command-line date: `2026-01-31`, a time after `T` or a space (`06:00`, `06:00:30`, `06:00:30.250`), and an
 * optional `Z` or offset (`+01:00`, `+0100`), as the commands print times (docs/operations.md "Times").
 */
const COMMAND_LINE_DATE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3})\d*)?)?(?:(Z)|([+-])(\d{2}):?(\d{2}))?)?$/i;

const DATE_FORMS = 'write 2026-01-31, 2026-01-31T06:00 or an ISO time with offset';

/** Why the parts of a command-line date name no moment (month 13, February 30, 24:00), or undefined. */
function impossibleDate(y: number, mo: number, d: number, h: number, mi: number, s: number): string | undefined {
  if (mo < 1 || mo > 12) return `there is no month ${mo}`;
  const days = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  if (d < 1 || d > days) return `${y}-${String(mo).padStart(2, '0')} has no day ${d}`;
  if (h > 23 || mi > 59 || s > 59) return 'hours go to 23, minutes and seconds to 59';
  return undefined;
}

/**
 * Parses a `--from`/`--to`/`--logical-time`/`--since` date of the command line: a date `2026-01-31` is midnight in
 * `zone`; a date and time without offset `2026-01-31T06:00` is wall time in `zone`; one with `Z` or an offset
 * (`2026-01-31 06:00:00+01:00`, as the commands print times) is taken as is.
 * @throws ConfigError when the text is none of those forms, or names no moment (`2026-02-30`, `2026-13-01`, `25:00`)
 */
export function parseZonedDate(text: string, zone: string): Date {
  const m = COMMAND_LINE_DATE.exec(text.trim());
  if (!m) throw new ConfigError([`not a date: "${text}" (${DATE_FORMS})`]);
  const [y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, oh = 0, om = 0] = [1, 2, 3, 4, 5, 6, 10, 11].map((i) =>
    Number(m[i] ?? 0),
  );
  const impossible = impossibleDate(y, mo, d, h, mi, s) ?? (oh > 23 || om > 59 ? 'no such UTC offset' : undefined);
  if (impossible) throw new ConfigError([`not a date: "${text}": ${impossible} (${DATE_FORMS})`]);
  const wall = Date.UTC(y, mo - 1, d, h, mi, s);
  const ms = Number((m[7] ?? '').padEnd(3, '0'));
  if (m[8]) return new Date(wall + ms);
  if (m[9]) return new Date(wall + ms - (m[9] === '-' ? -1 : 1) * (oh * 60 + om) * 60_000);
  // settleWall works in whole seconds, as wall times are read.
  return new Date(settleWall(wall, zone) + ms);
}
