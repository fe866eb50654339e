/**
 * UTC offsets of an IANA time zone without a per-call Intl round trip: the scheduler's tick arithmetic and the
 * simulator's timestamp rendering both need the offset at millions of instants.
 */

/** Quarter hours: every real zone changes its offset on a quarter-hour boundary. */
const BUCKET_MS = 900_000;

/**
 * Makes a function giving the offset of `zone` from UTC in ms at an instant (epoch ms), e.g. 3_600_000 for CET;
 * looked up with Intl once per quarter hour and cached.
 * @throws RangeError when the zone is unknown to Intl
 */
export function makeZoneOffset(zone: string): (ms: number) => number {
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  });
  const cache = new Map<number, number>();
  return (ms) => {
    const bucket = Math.floor(ms / BUCKET_MS);
    let offset = cache.get(bucket);
    if (offset === undefined) {
      const at = bucket * BUCKET_MS;
      const p: Record<string, number> = {};
      for (const part of format.formatToParts(at)) if (part.type !== 'literal') p[part.type] = Number(part.value);
      offset = Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!) - at;
      if (cache.size > 200_000) cache.clear();
      cache.set(bucket, offset);
    }
    return offset;
  };
}

const DAY_MS = 86_400_000;
const HOURS_36_MS = 129_600_000;

/**
 * Makes a function giving the offset from UTC in ms of a local wall-clock time in `zone` (the wall clock's fields
 * read as if UTC, in epoch ms), resolved as PostgreSQL resolves a timestamp without offset (its
 * DetermineTimeZoneOffset): a time that a spring-forward transition skips takes the offset before the transition, a
 * time that a fall-back transition repeats takes the offset after it. Days far from any transition are cached, so
 * that a column of a million timestamps costs one Map lookup each.
 * @throws RangeError when the zone is unknown to Intl
 */
export function makeLocalTimeOffset(zone: string): (localMs: number) => number {
  const offsetAt = makeZoneOffset(zone);
  // Local day → its one offset, or NaN when a transition is near (assumed, as PostgreSQL does, at least 2 days apart).
  const days = new Map<number, number>();
  return (local) => {
    const day = Math.floor(local / DAY_MS);
    let o = days.get(day);
    if (o === undefined) {
      const before = offsetAt(day * DAY_MS - 2 * DAY_MS);
      o = before === offsetAt(day * DAY_MS + 3 * DAY_MS) ? before : NaN;
      if (days.size > 100_000) days.clear();
      days.set(day, o);
    }
    if (!Number.isNaN(o)) return o;
    const before = offsetAt(local - HOURS_36_MS);
    const after = offsetAt(local + HOURS_36_MS);
    const beforeFits = offsetAt(local - before) === before;
    const afterFits = offsetAt(local - after) === after;
    if (beforeFits !== afterFits) return beforeFits ? before : after;
    // Both fit: a repeated time, the later reading. Neither: a skipped time, the reading before the transition.
    return beforeFits ? after : before;
  };
}
