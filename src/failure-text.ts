/**
 * How a failure's text is summed up where there is room for one line (docs/architecture.md "Errors"): its first
 * meaningful line. The server's texts often open with a line that only introduces what follows ("Report execution
 * failed:"); the summary then joins the next non-blank line to it. The whole text is kept and shown wherever there
 * is room (the attempt page, alerts, `report-etl run`). history/attempt-list.ts summaryLineSql says the same in SQL.
 */

/** The first meaningful line of `text` (see the file comment), trimmed; '' for a blank text. */
export function summaryLine(text: string): string {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const first = lines[0] ?? '';
  return first.endsWith(':') && lines[1] !== undefined ? `${first} ${lines[1]}` : first;
}
