/**
 * The one way commands and admin pages print a moment (docs/operations.md "Times"): wall time in a zone with that
 * zone's UTC offset, `2026-11-25 23:44:49+01:00`, or UTC marked `Z`, `2026-11-25 22:44:49Z`. Which zone is the
 * setting `REPORT_ETL_TIME_ZONE`: unset or `job` for each job's own zone (its schedule's), `UTC` for UTC, or any IANA
 * zone for that one.
 */
import { makeExactZoneOffset } from './zone-offset.ts';

/**
 * `at` as wall time in `zone` with the zone's UTC offset at that instant: `2026-01-01 07:00:00+01:00` (whole seconds).
 * @throws RangeError for an unknown zone
 */
export function formatWithOffset(at: Date, zone: string): string {
  const seconds = Math.floor(at.getTime() / 1000) * 1000;
  const offsetMs = makeExactZoneOffset(zone)(seconds);
  const wall = new Date(seconds + offsetMs).toISOString().slice(0, 19).replace('T', ' ');
  const offsetMin = Math.round(offsetMs / 60_000);
  const abs = Math.abs(offsetMin);
  const hh = String(Math.floor(abs / 60)).padStart(2, '0');
  return `${wall}${offsetMin < 0 ? '-' : '+'}${hh}:${String(abs % 60).padStart(2, '0')}`;
}

/** The environment variable that chooses the zone times are printed in. */
export const TIME_ZONE_VARIABLE = 'REPORT_ETL_TIME_ZONE';

/**
 * The zone to print a job's times in: the setting's (`UTC` or an IANA zone), else the job's own, else UTC.
 * @param jobZone the job's IANA zone, undefined when the job is unknown (no longer in jobs.yaml)
 * @param setting `REPORT_ETL_TIME_ZONE` (default: the environment's)
 */
export function printZone(jobZone: string | undefined, setting = process.env[TIME_ZONE_VARIABLE]): string {
  const s = setting?.trim();
  if (s && s.toLowerCase() !== 'job') return s.toUpperCase() === 'UTC' || s.toUpperCase() === 'Z' ? 'UTC' : s;
  return jobZone ?? 'UTC';
}

/**
 * Checks `REPORT_ETL_TIME_ZONE`.
 * @returns a sentence saying what is wrong and how to fix it, or undefined when it is usable
 */
export function timeZoneSettingProblem(setting = process.env[TIME_ZONE_VARIABLE]): string | undefined {
  const zone = printZone(undefined, setting);
  if (zone === 'UTC') return undefined;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return undefined;
  } catch {
    return `${TIME_ZONE_VARIABLE}=${setting}: unknown time zone (write job, UTC or an IANA zone such as Europe/Berlin)`;
  }
}

/**
 * A moment as text: `2026-11-25 23:44:49+01:00` in the chosen zone (see {@link printZone}), `2026-11-25 22:44:49Z`
 * in UTC (also for a zone Intl does not know); empty for no time.
 * @param jobZone the job's IANA zone, undefined when unknown
 */
export function formatTime(t: Date | null | undefined, jobZone?: string, setting?: string): string {
  if (!t) return '';
  const zone = printZone(jobZone, setting ?? process.env[TIME_ZONE_VARIABLE]);
  if (zone !== 'UTC') {
    try {
      return formatWithOffset(t, zone);
    } catch {
      // An unknown zone: UTC, which is never wrong.
    }
  }
  return `${t.toISOString().slice(0, 19).replace('T', ' ')}Z`;
}
