/**
 * An xml_query report whose pages take the general (saxes) path of src/pages/xml-decoder.ts, loaded fresh through
 * the simulator: the column types inferred from what saxes wrote, and every value. A raw tab in a field's name
 * attribute is not the fast scanner's shape (xml-fast.ts); saxes reads it as a space (XML attribute normalisation).
 */
import { describe, expect, it } from 'vitest';
import type { ExtraReport } from '../src/simulator/catalogue.ts';
import { columnTypes, jobEntry, useHarness } from './support/harness.ts';

// One text value far longer than a third of the output slab's 1 MiB: writing it moves the pending bytes to a new
// slab. Its bytes after the first are digits, so read from where it began in the old slab it looked numeric.
const LONG = `x${'7'.repeat(400_000)}`;
const REPORT: ExtraReport = {
  path: 'Test/Slab.avw',
  columns: [
    { name: 'Notiz\tTag', kind: 'text' },
    { name: 'Nr', kind: 'text' },
  ],
  rows: [
    ['n1', '1'],
    ['c', LONG],
    ['n3', '3'],
  ],
};
const h = useHarness({ reports: [REPORT] });

describe('xml_query through saxes, loaded fresh', () => {
  it('infers a column text whose one text value moved the output to a new slab, and loads every value', async () => {
    const table = `${h.schema}.slab`;
    const config = h.config({ j: jobEntry({ name: REPORT.path, outputType: 'xml_query' }, { table }) });
    await h.run(config, 'j');
    expect(await columnTypes(h.pool, table)).toEqual({ notiz_tag: 'text', nr: 'text' });
    const { rows } = await h.pool.query<{ r: string[] }>(
      `SELECT ARRAY[notiz_tag, nr] AS r FROM ${table} ORDER BY ctid`,
    );
    expect(rows.map((r) => r.r)).toEqual([
      ['n1', '1'],
      ['c', LONG],
      ['n3', '3'],
    ]);
  });
});
