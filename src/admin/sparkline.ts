/**
 * Sparklines for the jobs overview, inline SVG drawn on the server (the pages' CSP allows no script). One point per
 * finished attempt, oldest left; a failure is a red dot on the baseline, so a gap in the line reads as "it failed".
 */
import { html, type SafeHtml } from './html.ts';

/** One point: the value (rows, ms) of a succeeded attempt, or a failure. */
interface SparkPoint {
  value: number | null;
  failed: boolean;
}

/**
 * An SVG sparkline of `points`, `width` x `height` px, titled with what it shows and the last value.
 * @param label e.g. "rows of the last 20 runs"
 * @param format renders a value for the title
 */
export function sparkline(
  points: SparkPoint[],
  label: string,
  format: (v: number) => string,
  width = 120,
  height = 24,
): SafeHtml {
  if (points.length === 0) {
    return html`<svg class="spark" width="${width}" height="${height}" role="img" aria-label="${label}: no runs yet">\
<title>${label}: no runs yet</title></svg>`;
  }
  const values = points.map((p) => p.value).filter((v): v is number => v !== null && Number.isFinite(v));
  const last = [...points].reverse().find((p) => p.value !== null)?.value;
  const title = `${label}${last !== undefined && last !== null ? `; last ${format(last)}` : ''}`;
  const max = Math.max(1, ...values);
  const step = points.length > 1 ? (width - 4) / (points.length - 1) : 0;
  const x = (i: number) => (2 + i * step).toFixed(1);
  const y = (v: number) => (height - 2 - (v / max) * (height - 4)).toFixed(1);
  const segments: string[][] = [[]];
  points.forEach((p, i) => {
    if (p.value === null || p.failed) segments.push([]);
    else segments[segments.length - 1]!.push(`${x(i)},${y(p.value)}`);
  });
  const lines = segments
    .filter((s) => s.length > 1)
    .map((s) => html`<polyline points="${s.join(' ')}" fill="none" stroke="#0969da" stroke-width="1.5"/>`);
  const dots = points.map((p, i) =>
    p.failed
      ? html`<circle cx="${x(i)}" cy="${height - 3}" r="2.2" fill="#cf222e"/>`
      : p.value !== null
        ? html`<circle cx="${x(i)}" cy="${y(p.value)}" r="1.3" fill="#0969da"/>`
        : '',
  );
  return html`<svg class="spark" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" \
aria-label="${title}"><title>${title}</title>${lines}${dots}</svg>`;
}
