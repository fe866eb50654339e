/**
 * Real rows nobody on the project wrote (test/support/vega.ts), served by the simulator as reports and loaded in
 * every typed row output type: each cell must arrive exactly (docs/loaded-tables.md "Types"), dates and ISO
 * timestamps typed, and a load into an existing table of narrower types must fail naming the value
 * (docs/loaded-tables.md "Values that would change").
 */
import { describe, expect, it } from 'vitest';
import { normaliseColumnNames, quoteIdent } from '../src/warehouse/identifiers.ts';
import { USERDEF_ROWS_POINTER } from '../src/simulator/render-userdef.ts';
import { attemptFailure, columnTypes, jobEntry, useHarness } from './support/harness.ts';
import { realReports } from './support/vega.ts';

const REPORTS = realReports();
const h = useHarness({ reports: REPORTS });
const OUTPUT_TYPES = ['json', 'json_compact', 'txt', 'txt_cstr', 'json_userdef', 'xml_query'] as const;

/** A decimal's value as digits and exponent, so that 1.5e-7 equals 0.00000015 and 3.75E+3 equals 3750. */
function decimalValue(t: string): string {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(t);
  if (!m) return `not a number: ${t}`;
  const all = m[2]! + (m[3] ?? '');
  const digits = all.replace(/^0+/, '').replace(/0+$/, '');
  if (digits === '') return '0';
  const exp = m[2]!.length - (all.length - all.replace(/^0+/, '').length) + Number(m[4] ?? 0);
  return `${m[1] === '-' ? '-' : ''}0.${digits}e${exp}`;
}

async function load(path: string, outputType: (typeof OUTPUT_TYPES)[number], table: string) {
  const config = h.config({
    j: jobEntry(
      { name: path, outputType, paging: 1000 },
      { table, ...(outputType === 'json_userdef' ? { rowsAt: USERDEF_ROWS_POINTER } : {}) },
    ),
  });
  return h.run(config, 'j');
}

/** The loaded cells in row order of the report (by a row number column added for the comparison), as text. */
async function loadedCells(
  table: string,
  names: string[],
  types: Record<string, string>,
): Promise<(string | null)[][]> {
  const exprs = names.map((n) =>
    types[n] === 'timestamp with time zone'
      ? `to_char(${quoteIdent(n)} AT TIME ZONE 'Europe/Zurich', 'YYYY-MM-DD"T"HH24:MI:SS')`
      : `${quoteIdent(n)}::text`,
  );
  const { rows } = await h.pool.query<{ r: (string | null)[] }>(
    `SELECT ARRAY[${exprs.join(', ')}] AS r FROM ${table} ORDER BY ctid`,
  );
  return rows.map((r) => r.r);
}

describe('real data, loaded fresh', () => {
  for (const outputType of OUTPUT_TYPES) {
    it(`every cell arrives exactly: ${outputType}`, async () => {
      for (const report of REPORTS) {
        const table = `${h.schema}.${report.path.slice(5, -4).toLowerCase()}_${outputType}`;
        await load(report.path, outputType, table);
        const names = normaliseColumnNames(report.columns.map((c) => c.name));
        const types = await columnTypes(h.pool, table);
        const loaded = await loadedCells(table, names, types);
        expect(loaded).toHaveLength(report.rows.length);
        for (const [r, row] of report.rows.entries()) {
          for (const [c, column] of report.columns.entries()) {
            const source = row[c] ?? null;
            const got = loaded[r]![c]!;
            const where = `${report.path} row ${r + 1} column ${column.name}`;
            if (source === null || got === null) expect({ where, got }).toEqual({ where, got: source });
            else if (column.kind === 'decimal' || column.kind === 'integer')
              expect({ where, got: decimalValue(got) }).toEqual({ where, got: decimalValue(source) });
            else expect({ where, got }).toEqual({ where, got: source });
          }
        }
      }
      // Dates and zone-less ISO timestamps typed; a date style that reads more than one way and codes stay text.
      const types = (name: string) => columnTypes(h.pool, `${h.schema}.${name}_${outputType}`);
      expect((await types('weather')).date).toBe('date');
      expect((await types('hourly')).date).toBe('timestamp with time zone');
      expect((await types('github')).time).toBe('text');
      expect((await types('species')).county_id).toBe('text');
      expect((await types('airports')).latitude).toBe('numeric');
      expect((await types('penguins')).scale).toBe('numeric');
    });
  }
});

describe('real data, into an existing table whose types a smaller first load fixed', () => {
  for (const outputType of ['json', 'txt', 'txt_cstr', 'xml_query', 'json_userdef'] as const) {
    it(`a county code "08…" meeting a bigint column fails naming it, the table untouched: ${outputType}`, async () => {
      const table = `${h.schema}.species_narrow_${outputType}`;
      await h.pool.query(
        `CREATE TABLE ${table} (item_id text, common_name text, scientific_name text, gap_species_code text, ` +
          `county_id bigint, habitat_yearround_pct numeric)`,
      );
      await h.pool.query(`INSERT INTO ${table} (county_id) VALUES (53000)`);
      const err = await attemptFailure(load('Real/Species.avw', outputType, table));
      expect(err.code).toBe('VALUE_DOES_NOT_FIT');
      expect((err as Error).message).toMatch(
        /^value "0\d{4}" does not fit column county_id of type bigint in .*, page 1, row 37 of the page \(row 37 of /,
      );
      expect((err as Error).message).toContain('(row 37 of the run): it is text');
      const { rows } = await h.pool.query(`SELECT county_id::text AS c FROM ${table}`);
      expect(rows).toEqual([{ c: '53000' }]);
    });
  }
});
