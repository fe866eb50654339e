/**
 * The life cycle of a page decoder (docs/architecture.md "Flow of one run"): given the loader's plan before the first
 * page, it asks it once, when page 1 told the columns, whether to record the kinds of the values and whether to write
 * COPY binary format. A binary load that met a value it must leave to PostgreSQL makes a fresh decoder, in text format.
 */
import type { PlanRows, RowsPlan } from '../warehouse/row-source.ts';

export type { PlanRows, RowsPlan } from '../warehouse/row-source.ts';

/** The plan of a decoder nobody planned (previews, tests): inspect every value, text format. */
const INSPECT_IN_TEXT: PlanRows = () => ({ inspect: true });

/** A decoder's hold of its plan: set before the first page, asked once when the columns are known. */
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
