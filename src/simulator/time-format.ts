/**
 * Timestamp formatting by arithmetic, for the simulator's hot rendering path: no Intl or Date per row.
 *
 * The UTC offset of a time zone is looked up once per 15-minute bucket with Intl and cached, so that
 * rendering a million rows costs a few thousand Intl calls at most (every real zone changes its offset
 * on a quarter hour).
 */
import { makeZoneOffset } from '../zone-offset.ts';

const MS_PER_DAY = 86_400_000;

/** '00'..'99' */
const PAD2: string[] = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));
/** '000'..'999' */
const PAD3: string[] = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));

/** Civil date of a day count since 1970-01-01 (H. Hinnant's days_from_civil inverse). */
function civil(days: number): { y: number; m: number; d: number } {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return { y: era * 400 + yoe + (m <= 2 ? 1 : 0), m, d };
}

/** Date parts by day number, both layouts, cached: timestamps of a report share few days. */
const isoDays = new Map<number, string>();
const txtDays = new Map<number, string>();

function isoDay(days: number): string {
  let s = isoDays.get(days);
  if (s === undefined) {
    const { y, m, d } = civil(days);
    s = `${y}-${PAD2[m]}-${PAD2[d]}T`;
    if (isoDays.size > 100_000) isoDays.clear();
    isoDays.set(days, s);
  }
  return s;
}

function txtDay(days: number): string {
  let s = txtDays.get(days);
  if (s === undefined) {
    const { y, m, d } = civil(days);
    s = `${PAD2[d]}.${PAD2[m]}.${y} `;
    if (txtDays.size > 100_000) txtDays.clear();
    txtDays.set(days, s);
  }
  return s;
}

/** hh:mm:ss.mmm of a ms-of-day. */
function timeOfDay(rest: number): string {
  const hh = Math.floor(rest / 3_600_000);
  rest -= hh * 3_600_000;
  const mi = Math.floor(rest / 60_000);
  rest -= mi * 60_000;
  const ss = Math.floor(rest / 1000);
  return `${PAD2[hh]}:${PAD2[mi]}:${PAD2[ss]}.${PAD3[rest - ss * 1000]}`;
}

/** Epoch ms -> ISO 8601 UTC with ms, e.g. "2024-03-01T11:34:56.789Z" (the catalogue's canonical form). */
export function isoUtc(ms: number): string {
  const days = Math.floor(ms / MS_PER_DAY);
  return `${isoDay(days)}${timeOfDay(ms - days * MS_PER_DAY)}Z`;
}

/** Formats timestamps in one IANA time zone; offsets cached per 15-minute bucket. */
export interface ZonedFormatter {
  readonly timeZone: string;
  /** UTC offset in minutes at epoch ms `ms` (e.g. 60 for CET). */
  offsetMinutes(ms: number): number;
  /**
   * ISO 8601 with ms and offset, e.g. "2024-03-01T12:34:56.789+01:00" (docs/report-export-service.md "Job (report
   * session)" timestamps, json pages).
   */
  iso(ms: number): string;
  /** Local time as dd.mm.yyyy hh:mm:ss.mmm (docs/report-export-service.md "Output page shapes": txt). */
  txt(ms: number): string;
}

/**
 * Makes a {@link ZonedFormatter}.
 * @param timeZone IANA zone name, e.g. 'Europe/Zurich'
 * @throws RangeError when the zone is unknown to Intl
 */
export function makeZonedFormatter(timeZone: string): ZonedFormatter {
  const offsetMs = makeZoneOffset(timeZone);
  const suffixes = new Map<number, string>();

  function offsetMinutes(ms: number): number {
    return Math.round(offsetMs(ms) / 60_000);
  }

  function suffix(off: number): string {
    let s = suffixes.get(off);
    if (s === undefined) {
      const a = Math.abs(off);
      s = `${off < 0 ? '-' : '+'}${PAD2[Math.floor(a / 60)]}:${PAD2[a % 60]}`;
      suffixes.set(off, s);
    }
    return s;
  }

  return {
    timeZone,
    offsetMinutes,
    iso(ms) {
      const off = offsetMinutes(ms);
      const local = ms + off * 60_000;
      const days = Math.floor(local / MS_PER_DAY);
      return `${isoDay(days)}${timeOfDay(local - days * MS_PER_DAY)}${suffix(off)}`;
    },
    txt(ms) {
      const local = ms + offsetMinutes(ms) * 60_000;
      const days = Math.floor(local / MS_PER_DAY);
      return `${txtDay(days)}${timeOfDay(local - days * MS_PER_DAY)}`;
    },
  };
}
