/**
 * Aligned text tables for a terminal (`runs`, `replay`, `preview`): columns padded to the widest cell as the terminal
 * shows it — a CJK character takes two columns, a combining accent none (string-width) — so that a report's names and
 * values from anywhere line up. The last column is not padded, and no line ends in spaces.
 */
import stringWidth from 'string-width';

/**
 * Lines of an aligned table: the header line, then one per row.
 * @param header column titles
 * @param rows cells per row, as many as header; already safe for a terminal (terminal-text.ts)
 */
export function textTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => Math.max(stringWidth(h), ...rows.map((r) => stringWidth(r[i]!))));
  const line = (r: readonly string[]) =>
    r
      .map((v, i) => (i === r.length - 1 ? v : v + ' '.repeat(widths[i]! - stringWidth(v))))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}
