/**
 * Lines of COPY csv input back to rows. PostgreSQL's error context names the line (`COPY t, line 12, column …`), and
 * in csv format a line break inside a quoted value counts as a line of its own: a txt row whose text holds line breaks
 * (docs/report-export-service.md "Output page shapes", txt: a line break inside quotes is data) moves every row after
 * it down by as many lines. The txt decoder notes those rows here, so that an error names the row and page the value
 * is in (docs/loaded-tables.md "Values that would change").
 */

/** The rows whose values hold line breaks, in order; every other row is one line. */
export class CopyLines {
  /** 1-based rows of the run with line breaks inside a value, ascending. */
  private rows: number[] = [];
  /** Per noted row: the line its input ends on (row + breaks of it and of every noted row before it). */
  private ends: number[] = [];
  private breaks = 0;

  /**
   * Notes that row `row` (1-based, of the run; after every row noted before) holds `breaks` line breaks inside its
   * quoted values.
   */
  note(row: number, breaks: number): void {
    this.breaks += breaks;
    this.rows.push(row);
    this.ends.push(row + this.breaks);
  }

  /** The 1-based row of the run whose input holds 1-based line `line`, as PostgreSQL counts it. */
  rowOfLine(line: number): number {
    const ends = this.ends;
    // k = the noted rows that end before the line; their breaks come before it.
    let lo = 0;
    let hi = ends.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ends[mid]! < line) lo = mid + 1;
      else hi = mid;
    }
    const before = lo === 0 ? 0 : ends[lo - 1]! - this.rows[lo - 1]!;
    const row = line - before;
    // The line lies within the next noted row's lines when that row starts at or before it.
    return lo < ends.length && row >= this.rows[lo]! ? this.rows[lo]! : row;
  }
}
