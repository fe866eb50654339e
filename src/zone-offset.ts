/**
 * UTC offsets of an IANA time zone from Intl without a per-call Intl round trip where that matters: the simulator's
 * timestamp rendering needs the offset at millions of instants; binary COPY builds its local-time reading on these
 * (copy-binary/local-time.ts).
 */

/** Quarter hours: every zone of today changes its offset on a quarter-hour boundary (not every historical one). */
const BUCKET_MS = 900_000;

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
