/**
 * Whether this process (Node's Intl) and PostgreSQL (its tz database) agree on a time zone's rules: binary format
 * turns timestamps without offset into instants here, text format leaves it to PostgreSQL, and the two databases can
 * differ. Compared every 30 days from 1850 to 2040, on both sides of every transition Intl knows in those years, and
 * at a few far instants; asked once per zone and process.
 */
import type { Queryable } from '../db.ts';
import { makeExactZoneOffset, type OffsetAt } from '../zone-offset.ts';

const WEEK_MS = 7 * 86_400_000;
const MONTH_MS = 30 * 86_400_000;
const FROM_MS = Date.UTC(1850, 0, 1);
const TO_MS = Date.UTC(2041, 0, 1);
/** Far instants: years 1 to 1849 (local mean time in tzdata) and 2041 to 9999 (the last rules, repeated). */
const FAR_YEARS = [1, 500, 1000, 1500, 1800, 2100, 2500, 5000, 9999];
/** Per zone: the answer, or the question still being asked (so that two callers ask PostgreSQL once). */
const agreed = new Map<string, Promise<boolean>>();

/** The instants compared for one zone, in epoch seconds. */
function instants(offsetAt: OffsetAt): number[] {
  const out: number[] = [];
  for (let t = FROM_MS; t < TO_MS; t += MONTH_MS) out.push(t / 1000);
  for (const t of findTransitions(offsetAt, FROM_MS, TO_MS, WEEK_MS)) out.push(t / 1000 - 1, t / 1000);
  for (const y of FAR_YEARS) {
    for (const month of [0, 6]) {
      const d = new Date(0);
      d.setUTCFullYear(y, month, 15);
      d.setUTCHours(12);
      out.push(d.getTime() / 1000);
    }
  }
  return out;
}

/**
 * Compares the offsets of `zone` in PostgreSQL with Intl's; the answer is kept for the process (a concurrent call
 * waits for it, and asks itself when that one failed).
 * @returns true when they agree at every instant compared; false when not, or when Intl does not know the zone
 * @throws the query's error (nothing is kept then: the next call asks again)
 */
export async function zoneAgreesWithDatabase(db: Queryable, zone: string): Promise<boolean> {
  const asked = agreed.get(zone);
  if (asked !== undefined) {
    try {
      return await asked;
    } catch {
      // Another load asked on its own transaction, which failed (cancelled, rolled back): ask on this one.
    }
  }
  let answer = agreed.get(zone);
  if (answer === undefined || answer === asked) {
    const mine = compareZone(db, zone);
    agreed.set(zone, mine);
    mine.catch(() => {
      if (agreed.get(zone) === mine) agreed.delete(zone);
    });
    answer = mine;
  }
  return answer;
}

async function compareZone(db: Queryable, zone: string): Promise<boolean> {
  let offsetAt: OffsetAt;
  try {
    offsetAt = makeExactZoneOffset(zone);
  } catch {
    return false;
  }
  const at = instants(offsetAt);
  const { rows } = await db.query<{ offsets: number[] }>(
    `SELECT array_agg(extract(epoch FROM (t AT TIME ZONE $2) - (t AT TIME ZONE 'UTC'))::int ORDER BY n) AS offsets
       FROM unnest($1::float8[]) WITH ORDINALITY AS u(e, n), to_timestamp(e) AS t`,
    [at, zone],
  );
  const theirs = rows[0]?.offsets ?? [];
  return theirs.length === at.length && at.every((s, k) => offsetAt(s * 1000) / 1000 === theirs[k]);
}

/**
 * The instants (epoch ms, whole seconds) in [fromMs, toMs) where `offsetAt` changes: found by sampling every
 * `stepMs` and bisecting each change to the second. A change undone within one step is not seen.
 */
export function findTransitions(offsetAt: OffsetAt, fromMs: number, toMs: number, stepMs: number): number[] {
  const out: number[] = [];
  let prev = offsetAt(fromMs);
  for (let t = fromMs; t < toMs;) {
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
