/** Durations in jobs.yaml (`freshness: 26h`): a positive whole number and a unit s, m, h, d or w. */

const WINDOW = /^([1-9][0-9]*)(s|m|h|d|w)$/;
const WINDOW_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** How to write a duration, for problem texts. */
export const DURATION_HINT = 'write a number and a unit s, m, h, d or w, e.g. 30m, 26h, 90d';

/** Parses a duration such as `26h` into ms; undefined when the text is not one. */
export function parseWindow(text: string): number | undefined {
  const m = WINDOW.exec(text.trim());
  return m ? Number(m[1]) * WINDOW_MS[m[2]!]! : undefined;
}
