/**
 * Local times as PostgreSQL reads them, for binary COPY of timestamps written without offset: PostgreSQL's text input
 * would turn them into instants with its tz database, this module does it with Intl's, the same way
 * (docs/architecture.md "Flow of one run"); zone-check.ts makes sure the two databases agree.
 */
import { makeExactZoneOffset, type OffsetAt } from '../zone-offset.ts';
import { findTransitions } from './zone-check.ts';

const DAY_MS = 86_400_000;
const HOURS_36_MS = 129_600_000;

/** The one transition near a local day: the offset before it, its instant (epoch ms) and the offset from it on. */
interface Transition {
  before: number;
  at: number;
  after: number;
}

/**
 * Makes a function giving the offset from UTC in ms of a local wall-clock time in `zone` (its fields read as if UTC,
 * in epoch ms), resolved as PostgreSQL's DetermineTimeZoneOffset does: a time a spring-forward skips takes the offset
 * before the transition, a time a fall-back repeats the offset after it. Each local day asks Intl once and keeps its
 * offset or its one transition near (to the second); a day near two transitions asks Intl for each time. Intl is
 * first asked at the first call.
 * @throws RangeError at the first call, when the zone is unknown to Intl
 */
export function makeLocalTimeOffset(zone: string): (localMs: number) => number {
  const days = makeDayOffsets(zone);
  return (local) => {
    const o = days.of(Math.floor(local / DAY_MS));
    if (typeof o === 'number') return Number.isNaN(o) ? resolve(days.exact(), local) : o;
    const t = o;
    return resolve((x) => (x < t.at ? t.before : t.after), local);
  };
}

/** A zone's local days, each with {@link dayOffsets}' answer, asked of Intl once per day (Intl first at the first). */
interface DayOffsets {
  /** Local day `day` (days since 1970-01-01) → its one offset, its one transition near, or NaN (more than one). */
  of(day: number): number | Transition;
  /** The zone's exact offset at an instant (Intl), for days near more than one transition. */
  exact(): OffsetAt;
}

/** Local days kept in an array around the first one asked (about 22 years each way); days beyond in a Map. */
const NEAR_DAYS = 16_384;

function makeDayOffsets(zone: string): DayOffsets {
  let offsetAt: OffsetAt | undefined;
  // An array index is cheaper than a Map look-up, which every timestamp without offset asks.
  let origin = NaN;
  const near = new Array<number | Transition | undefined>(NEAR_DAYS);
  const days = new Map<number, number | Transition>();
  const exact = (): OffsetAt => (offsetAt ??= makeExactZoneOffset(zone));
  return {
    of(day) {
      if (Number.isNaN(origin)) origin = day - NEAR_DAYS / 2;
      const k = day - origin;
      if (k >= 0 && k < NEAR_DAYS) return (near[k] ??= dayOffsets(exact(), day));
      let o = days.get(day);
      if (o === undefined) {
        o = dayOffsets(exact(), day);
        if (days.size > 100_000) days.clear();
        days.set(day, o);
      }
      return o;
    },
    exact,
  };
}

/** Whether local wall-clock times exist in one zone; see {@link makeLocalTimeExists}. */
export interface LocalTimeExists {
  /** True when local day `day` (days since 1970-01-01) has no transition near: every time of it exists. */
  plainDay(day: number): boolean;
  /** Whether the local time `localMs` (its fields read as if UTC, in epoch ms) exists. */
  exists(localMs: number): boolean;
}

/**
 * Tells whether a local wall-clock time exists in `zone`: not for a time that a spring-forward transition skips
 * (02:30 on the day Europe/Zurich goes from 02:00 to 03:00), which PostgreSQL reads as a later time, a value changed on
 * its way in (docs/loaded-tables.md "Values that would change"). Cached per local day as {@link makeLocalTimeOffset}
 * is, so that a caller asks {@link LocalTimeExists.plainDay} first and reads the time of day only when it is not.
 * @throws RangeError at the first call, when the zone is unknown to Intl
 */
export function makeLocalTimeExists(zone: string): LocalTimeExists {
  const days = makeDayOffsets(zone);
  // The last day found plain (consecutive values mostly share their day): no lookup.
  let lastPlain = NaN;
  return {
    plainDay(day) {
      if (day === lastPlain) return true;
      const o = days.of(day);
      if (typeof o !== 'number' || Number.isNaN(o)) return false;
      lastPlain = day;
      return true;
    },
    exists(local) {
      const o = days.of(Math.floor(local / DAY_MS));
      if (typeof o === 'number' && !Number.isNaN(o)) return true;
      const t = o;
      const at: OffsetAt = typeof t === 'number' ? days.exact() : (x) => (x < t.at ? t.before : t.after);
      const before = at(local - HOURS_36_MS);
      const after = at(local + HOURS_36_MS);
      // A reading of the wall clock that gives back the same offset: the time exists (once, or twice when repeated).
      return at(local - before) === before || at(local - after) === after;
    },
  };
}

/**
 * The offsets of a local day's window (2 days before its start to 3 days after): one offset, the one transition in it
 * (bisected to the second), or NaN when it holds more than one.
 */
function dayOffsets(offsetAt: OffsetAt, day: number): number | Transition {
  const from = day * DAY_MS - 2 * DAY_MS;
  const to = day * DAY_MS + 3 * DAY_MS;
  const before = offsetAt(from);
  const after = offsetAt(to);
  if (before === after) return before;
  const at = findTransitions(offsetAt, from, to, to - from)[0]!;
  return offsetAt(at) === after ? { before, at, after } : NaN;
}

/** The offset of local time `local` by PostgreSQL's rule, with `offsetAt` exact over the 36 hours around it. */
function resolve(offsetAt: OffsetAt, local: number): number {
  const before = offsetAt(local - HOURS_36_MS);
  const after = offsetAt(local + HOURS_36_MS);
  const beforeFits = offsetAt(local - before) === before;
  const afterFits = offsetAt(local - after) === after;
  if (beforeFits !== afterFits) return beforeFits ? before : after;
  // Both fit: a repeated time, the later reading. Neither: a skipped time, the reading before the transition.
  return beforeFits ? after : before;
}
