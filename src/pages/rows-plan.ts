/**
 * The life cycle every page decoder shares (docs/architecture.md "Flow of one run"):
 *
 * 1. made for one pass over a report's pages, and given the loader's plan (`planRows`) before the first page;
 * 2. learns the report's columns from page 1 (its header, or its first row; fixed-shape types know them from the
 *    start) and asks the plan, once and synchronously, how to write the rows — record the kinds of every value for
 *    type inference? COPY binary format with these encodings? — before it decodes any row;
 * 3. decodes every row in that format, page after page (later pages' columns must be page 1's);
 * 4. is done: a load that must start over (its binary COPY met a value it must leave to PostgreSQL) makes a fresh
 *    decoder for a second pass, in text format.
 *
 * The plan is synchronous because the loader asks everything it needs of PostgreSQL before the first page (the
 * target's columns, whether the zone rules agree): the decoder never has to pause between learning the columns and
 * writing the first row.
 */
import type { PlanRows, RowsPlan } from '../warehouse/row-source.ts';

export type { PlanRows, RowsPlan } from '../warehouse/row-source.ts';

/** The plan of a decoder nobody planned (previews, tests): inspect every value, text format. */
export const INSPECT_IN_TEXT: PlanRows = () => ({ inspect: true });

/**
 * A decoder's hold of its plan: set before the first page, asked once when the columns are known.
 */
export class PlanHolder {
  private plan: PlanRows = INSPECT_IN_TEXT;
  private asked = false;

  /** Step 1: the loader's plan. @throws Error when the columns were learned already (a decoder is used once) */
  set(plan: PlanRows): void {
    if (this.asked) throw new Error('planRows after the columns were learned: a page decoder is used for one pass');
    this.plan = plan;
  }

  /** Step 2: the columns are known; what to do with the rows. */
  ask(columns: readonly string[]): RowsPlan {
    this.asked = true;
    return this.plan(columns);
  }
}

/**
 * Runs `scan` over `buf`, advancing `st.offset` by what it consumed. A scan stops right after the columns were
 * learned (`learned()` then says so), so that the rows after them are scanned in the format the plan chose: then the
 * rest of `buf` is scanned too.
 * @param scan scans whole units from the start of its argument; returns the index after the last whole one
 * @returns the index in `buf` after the last whole unit
 */
export function scanAcrossPlan(
  buf: Buffer,
  st: { offset: number },
  scan: (b: Buffer) => number,
  learned: () => boolean,
): number {
  let consumed = scan(buf);
  st.offset += consumed;
  if (learned()) {
    const more = scan(buf.subarray(consumed));
    st.offset += more;
    consumed += more;
  }
  return consumed;
}
