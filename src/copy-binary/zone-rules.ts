/**
 * A time zone's rules as Intl knows them, as a table: every transition from 1850 to 2040 with the offsets on both
 * sides. Finding them takes some 40,000 Intl look-ups (about 30 ms, and Intl loads its zone data the first time),
 * and the answer depends only on the tz database built into this Node (`process.versions.icu` and `.tz`), so
 * zone-check.ts keeps it in PostgreSQL (`etl.zone_rules`, migrations/0014) for every later process of every worker
 * with the same Node: their zone check is then one query, and their local times (local-time.ts) are read from the
 * table, with no Intl look-up at all, except for instants outside those years (docs/architecture.md "Flow of one run").
 */
import { makeExactZoneOffset, type OffsetAt } from '../zone-offset.ts';

/** The table's first instant: 1850-01-01T00:00Z (epoch ms). */
export const RULES_FROM_MS = Date.UTC(1850, 0, 1);
/** The table's end, exclusive: 2041-01-01T00:00Z (epoch ms). */
export const RULES_TO_MS = Date.UTC(2041, 0, 1);
/**
 * Step of the search for transitions, ms: two days. Two transitions that undo each other within it are not seen,
 * which PostgreSQL's own reading of local times assumes never happens (it takes transitions to be at least two days
 * apart), as local-time.ts's five-day window did before.
 */
const SEARCH_STEP_MS = 2 * 86_400_000;
/** Changes whenever the way the table is made changes: a table made another way is made again (etl.zone_rules.tzdata). */
const RULES_METHOD = 1;

/** One zone's transitions in [{@link RULES_FROM_MS}, {@link RULES_TO_MS}). */
export interface ZoneRules {
  zone: string;
  /** Instants (epoch ms, whole seconds, ascending) where the offset changes. */
  transitions: readonly number[];
  /**
   * Offsets from UTC in ms, one more than transitions: `offsets[0]` from RULES_FROM_MS to the first transition,
   * `offsets[i + 1]` from `transitions[i]` on.
   */
  offsets: readonly number[];
}

/**
 * The tz database this process's Intl uses, as `etl.zone_rules.tzdata` keys it (`icu 77.1, tz 2025b, rules 1`), or
 * undefined when Node does not say its tz version: then nothing is kept or read, and every process asks Intl.
 */
export function intlTzdata(): string | undefined {
  const { icu, tz } = process.versions as { icu?: string; tz?: string };
  return icu && tz ? `icu ${icu}, tz ${tz}, rules ${RULES_METHOD}` : undefined;
}

/**
 * Finds `zone`'s transitions with Intl (sampled every two days, each bisected to the second).
 * @param offsetAt the zone's exact offsets (zone-offset.ts makeExactZoneOffset)
 */
export function computeZoneRules(zone: string, offsetAt: OffsetAt): ZoneRules {
  const transitions = findTransitions(offsetAt, RULES_FROM_MS, RULES_TO_MS, SEARCH_STEP_MS);
  return { zone, transitions, offsets: [offsetAt(RULES_FROM_MS), ...transitions.map((t) => offsetAt(t))] };
}

/**
 * An offset function read from the table within its years (a binary search over the transitions) and from Intl
 * outside them (Intl's zone data is loaded at the first such instant, not before).
 * @throws RangeError from Intl at the first instant outside the table, when Intl does not know the zone
 */
export function rulesOffsetAt(rules: ZoneRules): OffsetAt {
  const { transitions, offsets } = rules;
  let outside: OffsetAt | undefined;
  return (ms) => {
    if (!(ms >= RULES_FROM_MS && ms < RULES_TO_MS)) return (outside ??= makeExactZoneOffset(rules.zone))(ms);
    // The number of transitions at or before ms.
    let lo = 0;
    let hi = transitions.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (transitions[mid]! <= ms) lo = mid + 1;
      else hi = mid;
    }
    return offsets[lo]!;
  };
}

/** Zones whose table this process has and PostgreSQL agreed with (zone-check.ts): local-time.ts reads them. */
const agreedRules = new Map<string, ZoneRules>();

/** Records `rules` as agreed with PostgreSQL for this process (zone-check.ts). */
export function rememberAgreedRules(rules: ZoneRules): void {
  agreedRules.set(rules.zone, rules);
}

/** The table of `zone` when this process has one that PostgreSQL agreed with, else undefined. */
export function agreedRulesOf(zone: string): ZoneRules | undefined {
  return agreedRules.get(zone);
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
