/**
 * UTC offsets of an IANA time zone from Intl without a per-call Intl round trip where that matters: the scheduler's
 * tick arithmetic and the simulator's timestamp rendering need the offset at millions of instants, the binary COPY of
 * timestamps without offset the reading of millions of local times as PostgreSQL reads them.
 */

/** Quarter hours: every zone of today changes its offset on a quarter-hour boundary (not every historical one). */
const BUCKET_MS = 900_000;
const DAY_MS = 86_400_000;
const HOURS_36_MS = 129_600_000;

/** An offset function: the offset of the zone from UTC in ms at an instant (epoch ms), e.g. 3_600_000 for CET. */
export type OffsetAt = (ms: number) => number;

/**
 * The exact offset of `zone` at an instant, asked of Intl each call (about 1 µs): its `longOffset` time zone name,
 * `GMT+01:00`, `GMT-03:30`, `GMT+00:53:28` (a local mean time) or `GMT`, read back.
 * @throws RangeError when the zone is unknown to Intl
 */
export function makeExactZoneOffset(zone: string): OffsetAt {
  const format = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset', year: 'numeric' });
  return (ms) => {
    const s = format.format(ms);
    const g = s.lastIndexOf('GMT');
    if (g < 0 || g + 3 === s.length) return 0;
    const sign = s.charCodeAt(g + 3) === 0x2d || s.charCodeAt(g + 3) === 0x2212 ? -1 : 1;
    const h = Number(s.slice(g + 4, g + 6));
    const m = Number(s.slice(g + 7, g + 9));
    const sec = s.length > g + 9 ? Number(s.slice(g + 10, g + 12)) : 0;
    return sign * ((h * 60 + m) * 60 + sec) * 1000;
  };
}

/**
 * Makes a function giving the offset of `zone` at an instant, looked up with Intl once per quarter hour and cached
 * (the offset at the quarter hour's start: exact for every zone's rules of today).
 * @throws RangeError when the zone is unknown to Intl
 */
export function makeZoneOffset(zone: string): OffsetAt {
  const exact = makeExactZoneOffset(zone);
  const cache = new Map<number, number>();
  return (ms) => {
    const bucket = Math.floor(ms / BUCKET_MS);
    let offset = cache.get(bucket);
    if (offset === undefined) {
      offset = exact(bucket * BUCKET_MS);
      if (cache.size > 200_000) cache.clear();
      cache.set(bucket, offset);
    }
    return offset;
  };
}

/**
 * Makes a function giving the offset from UTC in ms of a local wall-clock time in `zone` (the wall clock's fields
 * read as if UTC, in epoch ms), resolved as PostgreSQL resolves a timestamp without offset (its
 * DetermineTimeZoneOffset): a time that a spring-forward transition skips takes the offset before the transition, a
 * time that a fall-back transition repeats takes the offset after it. A day without a transition near is asked of
 * Intl once and cached, so that a column of a million timestamps costs one Map lookup each; near a transition every
 * time is resolved with exact offsets (historical transitions fall on any second).
 * @throws RangeError when the zone is unknown to Intl
 */
export function makeLocalTimeOffset(zone: string): (localMs: number) => number {
  const offsetAt = makeExactZoneOffset(zone);
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

/**
 * The instants (epoch ms, whole seconds) in [fromMs, toMs) where `offsetAt` changes: found by sampling every
 * `stepMs` and bisecting each change to the second. A change undone within one step is not seen.
 */
export function findTransitions(offsetAt: OffsetAt, fromMs: number, toMs: number, stepMs: number): number[] {
  const out: number[] = [];
  let prev = offsetAt(fromMs);
  for (let t = fromMs; t < toMs; ) {
    const next = Math.min(t + stepMs, toMs);
    const o = offsetAt(next);
    if (o !== prev) {
      // offsetAt(lo) is the old offset, offsetAt(hi) the new one: narrow to the second where it changes.
      let lo = t;
      let hi = next;
      while (hi - lo > 1000) {
        const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
        if (offsetAt(mid) === prev) lo = mid;
        else hi = mid;
      }
      out.push(hi);
      prev = o;
    }
    t = next;
  }
  return out;
}
