/**
 * Whether this process and PostgreSQL agree on a time zone's rules (issue 14). In binary format the loader turns a
 * timestamp written without offset (txt's dd.mm.yyyy hh:mm:ss, an ISO time without offset) into an instant itself,
 * with the zone rules of Node's Intl, where in text format PostgreSQL does it with its own tz database. The two
 * databases can differ (a country's new rules known to one and not yet to the other), so binary format is used for
 * such columns only when both give the same offset at two instants of every year from 1900 to 2040. Asked once per
 * zone and process.
 */
import type { Queryable } from '../db.ts';
import { makeZoneOffset } from '../zone-offset.ts';

const FIRST_YEAR = 1900;
const LAST_YEAR = 2040;
const agreed = new Map<string, boolean>();

/** The instants compared: January 15 and July 15, 12:00 UTC, of each year (ISO strings). */
function instants(): string[] {
  const out: string[] = [];
  for (let y = FIRST_YEAR; y <= LAST_YEAR; y++) out.push(`${y}-01-15T12:00:00Z`, `${y}-07-15T12:00:00Z`);
  return out;
}

/**
 * Compares the offsets of `zone` in PostgreSQL (whatever the session's TimeZone) with Intl's.
 * @returns true when they agree at every instant; false when not, or when Intl does not know the zone
 */
export async function zoneAgreesWithDatabase(db: Queryable, zone: string): Promise<boolean> {
  const known = agreed.get(zone);
  if (known !== undefined) return known;
  let offsetAt: (ms: number) => number;
  try {
    offsetAt = makeZoneOffset(zone);
  } catch {
    agreed.set(zone, false);
    return false;
  }
  const at = instants();
  const { rows } = await db.query<{ offsets: number[] }>(
    `SELECT array_agg(extract(epoch FROM (t AT TIME ZONE $2) - (t AT TIME ZONE 'UTC'))::int ORDER BY n) AS offsets
       FROM unnest($1::timestamptz[]) WITH ORDINALITY AS u(t, n)`,
    [at, zone],
  );
  const theirs = rows[0]?.offsets ?? [];
  const same = theirs.length === at.length && at.every((iso, k) => offsetAt(Date.parse(iso)) / 1000 === theirs[k]);
  agreed.set(zone, same);
  return same;
}
