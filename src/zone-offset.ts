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
