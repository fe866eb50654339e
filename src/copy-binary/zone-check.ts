/**
 * Whether this process and PostgreSQL agree on a time zone's rules. In binary format the loader turns a
 * timestamp written without offset (txt's dd.mm.yyyy hh:mm:ss, an ISO time without offset) into an instant itself,
 * with the zone's table of transitions taken from Node's Intl (zone-rules.ts), where in text format PostgreSQL does
 * it with its own tz database. The two databases can differ (a country's new rules known to one and not yet to the
 * other), so binary format is used for such columns only when PostgreSQL gives the table's offsets: every 30 days
 * from 1850 to 2040, on both sides of every transition, and at a few instants before and after (from Intl).
 *
 * The table and the offsets compared are made once per zone and tz database of Node, and kept in `etl.zone_rules`
 * (migrations/0014, 0015): a process whose Node has the same tz database asks PostgreSQL one query, which compares them
 * with PostgreSQL's offsets of today (its tz database may have changed since), and asks Intl nothing. Asked once per
 * zone and process (docs/architecture.md "Flow of one run").
 */
import type { Queryable } from '../db.ts';
import { makeExactZoneOffset } from '../zone-offset.ts';
import {
  computeZoneRules,
  intlTzdata,
  rememberAgreedRules,
  RULES_FROM_MS,
  RULES_TO_MS,
  rulesOffsetAt,
  type ZoneRules,
} from './zone-rules.ts';

const MONTH_MS = 30 * 86_400_000;
/** Far instants: years 1 to 1849 (local mean time in tzdata) and 2041 to 9999 (the last rules, repeated). */
const FAR_YEARS = [1, 500, 1000, 1500, 1800, 2100, 2500, 5000, 9999];
/** Per zone: the answer, or the question still being asked (so that two callers ask PostgreSQL once). */
const agreed = new Map<string, Promise<boolean>>();

/** The instants compared for a zone with the table `rules`, in epoch seconds. */
function instants(rules: ZoneRules): number[] {
  const out: number[] = [];
  for (let t = RULES_FROM_MS; t < RULES_TO_MS; t += MONTH_MS) out.push(t / 1000);
  for (const t of rules.transitions) out.push(t / 1000 - 1, t / 1000);
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

/** PostgreSQL's offset in seconds at the instant `t` (timestamptz) in zone `zone`, as SQL. */
const PG_OFFSET = (t: string, zone: string): string =>
  `extract(epoch FROM (${t} AT TIME ZONE ${zone}) - (${t} AT TIME ZONE 'UTC'))::int`;

/**
 * The kept table of a zone for this Node's tz database, and whether PostgreSQL gives its offsets today. The arrays come
 * as comma-separated text: pg's array parser took some 5 ms for them in a fresh process.
 */
const KEPT = `SELECT array_to_string(r.transitions, ',') AS transitions, array_to_string(r.offsets, ',') AS offsets,
         (SELECT coalesce(bool_and(${PG_OFFSET('t', 'r.zone')} = u.o), false)
            FROM unnest(r.instants, r.instant_offsets) AS u(e, o), to_timestamp(u.e) AS t) AS agrees
    FROM etl.zone_rules r WHERE r.zone = $1 AND r.tzdata = $2`;

/** PostgreSQL's offsets at the instants $1 (epoch seconds) in zone $2, in order. */
const THEIRS = `SELECT array_agg(${PG_OFFSET('t', '$2')} ORDER BY n) AS offsets
    FROM unnest($1::float8[]) WITH ORDINALITY AS u(e, n), to_timestamp(e) AS t`;

/**
 * Keeps a table made here (migrations/0015 etl.keep_zone_rules). It may run in a load transaction, so it never fails
 * it and never waits long: a second process that made the same table meanwhile skips keeping it instead of waiting
 * for the other's load to end, and an error (no privilege, a lock held on the table past 200 ms) only means the row
 * is not kept.
 */
const KEEP = 'SELECT etl.keep_zone_rules($1, $2, $3, $4, $5, $6)';

/**
 * Compares the offsets of `zone` in PostgreSQL (whatever the session's TimeZone) with this process's table of the
 * zone, kept in etl.zone_rules or made from Intl (and then kept). The answer is kept for the process; when they
 * agree, local-time.ts reads the zone's local times from the table. A call while another one asks waits for that
 * one's answer, and asks itself when that one failed (the other's transaction may have been cancelled).
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
  const tzdata = intlTzdata();
  if (tzdata !== undefined) {
    const { rows } = await db.query<{ transitions: string; offsets: string; agrees: boolean }>(KEPT, [zone, tzdata]);
    const kept = rows[0];
    if (kept) {
      if (kept.agrees)
        rememberAgreedRules({ zone, transitions: numbers(kept.transitions), offsets: numbers(kept.offsets) });
      return kept.agrees;
    }
  }
  let rules: ZoneRules;
  try {
    rules = computeZoneRules(zone, makeExactZoneOffset(zone));
  } catch {
    return false;
  }
  const offsetAt = rulesOffsetAt(rules);
  const at = instants(rules);
  const ours = at.map((s) => offsetAt(s * 1000) / 1000);
  const { rows } = await db.query<{ offsets: number[] }>(THEIRS, [at, zone]);
  const theirs = rows[0]?.offsets ?? [];
  const agrees = theirs.length === at.length && ours.every((o, k) => o === theirs[k]);
  if (tzdata !== undefined) await db.query(KEEP, [zone, tzdata, rules.transitions, rules.offsets, at, ours]);
  if (agrees) rememberAgreedRules(rules);
  return agrees;
}

/** The numbers of a comma-separated list ('' is none). */
function numbers(list: string): number[] {
  return list === '' ? [] : list.split(',').map(Number);
}
