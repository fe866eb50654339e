/**
 * Aligned text tables for a terminal: columns padded to the widest cell as a terminal shows it (string-width: a CJK
 * character takes two columns, a combining accent none). No line ends in spaces.
 */
import stringWidth from 'string-width';

/** The header line, then one per row; cells already safe for a terminal (terminal-text.ts). */
export function textTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => Math.max(stringWidth(h), ...rows.map((r) => stringWidth(r[i]!))));
  const line = (r: readonly string[]) =>
    r
      .map((v, i) => (i === r.length - 1 ? v : v + ' '.repeat(widths[i]! - stringWidth(v))))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}
