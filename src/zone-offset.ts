/** UTC offsets of an IANA time zone from Intl, exact or cached per quarter hour (the simulator's rendering). */

/** Quarter hours: every zone of today changes its offset on a quarter-hour boundary (not every historical one). */
const BUCKET_MS = 900_000;

/** An offset function: the offset of the zone from UTC in ms at an instant (epoch ms), e.g. 3_600_000 for CET. */
export type OffsetAt = (ms: number) => number;

/**
 * The exact offset of `zone` at an instant, asked of Intl each call: its `longOffset` name (`GMT+01:00`, `GMT-03:30`,
 * `GMT+00:53:28`, `GMT`) read back.
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
 * The offset of `zone` at an instant, asked of Intl once per quarter hour (exact for every zone's rules of today).
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
