/**
 * Real rows for tests: a few public datasets of the vega-datasets package (BSD-3-Clause; the datasets used here are
 * CC0 or works of the U.S. government, per its datapackage.json), served by the simulator as reports
 * (SimulatorOptions.reports).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { ExtraReport } from '../../src/simulator/index.ts';
import type { ReportColumn } from '../../src/simulator/catalogue.ts';

/** The package's data folder, beside its build (build/index.js is its entry point). */
const DATA = join(dirname(createRequire(import.meta.url).resolve('vega-datasets')), '..', 'data');

/** The records of a CSV file (RFC 4180: quoted fields may hold commas and doubled quotes), header first. */
export function readCsv(file: string): string[][] {
  const text = readFileSync(join(DATA, file), 'utf8');
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  if (field !== '' || row.length > 0) rows.push([...row, field]);
  return rows;
}

/** A report of CSV rows [from, to) of `file`: the header names the columns, `kinds` their kinds; '' is NULL. */
function csvReport(path: string, file: string, kinds: ReportColumn['kind'][], from: number, to: number): ExtraReport {
  const [header, ...records] = readCsv(file);
  return {
    path,
    columns: header!.map((name, i) => ({ name, kind: kinds[i]! })),
    rows: records.slice(from, to).map((r) => r.map((v) => (v === '' ? null : v))),
  };
}

/**
 * The real reports: Seattle weather (ISO dates, decimals with trailing zeros), hourly normals (ISO timestamps without
 * offset), GitHub activity (a date style that stays text), species by county (county codes whose leading zeros start
 * at row 37), airports (codes of digits and letters, 8-place decimals), and penguins (JSON: rows lacking keys, numbers
 * in exponent form, booleans).
 */
export function realReports(): ExtraReport[] {
  const penguins = JSON.parse(readFileSync(join(DATA, 'penguins.json'), 'utf8')) as Record<string, unknown>[];
  const names = Object.keys(penguins[0]!);
  const penguinRows = penguins.slice(0, 120).map((p, i) => {
    const cells: (string | null | undefined)[] = names.map((n) =>
      p[n] === null || p[n] === undefined ? undefined : String(p[n]),
    );
    // Body mass in exponent form on every third row (3750 → 3.75E+3), a tiny number on every fifth.
    const mass = cells[5];
    if (mass !== undefined && i % 3 === 0) cells[5] = `${Number(mass) / 1000}E+3`;
    const sex = p.Sex;
    return [...cells, sex === null ? undefined : String(sex === 'MALE'), i % 5 === 0 ? '1.5e-7' : String(i)];
  });
  return [
    csvReport(
      'Real/Weather.avw',
      'weather.csv',
      ['text', 'text', 'decimal', 'decimal', 'decimal', 'decimal', 'text'],
      0,
      150,
    ),
    csvReport(
      'Real/Hourly.avw',
      'seattle-weather-hourly-normals.csv',
      ['text', 'decimal', 'decimal', 'decimal'],
      0,
      60,
    ),
    csvReport('Real/Github.avw', 'github.csv', ['text', 'integer'], 0, 40),
    csvReport('Real/Species.avw', 'species.csv', ['text', 'text', 'text', 'text', 'text', 'decimal'], 700, 800),
    csvReport(
      'Real/Airports.avw',
      'airports.csv',
      ['text', 'text', 'text', 'text', 'text', 'decimal', 'decimal'],
      0,
      80,
    ),
    {
      path: 'Real/Penguins.avw',
      columns: [
        ...names.map((name, i) => ({ name, kind: i >= 2 && i <= 5 ? ('decimal' as const) : ('text' as const) })),
        { name: 'Male', kind: 'boolean' },
        { name: 'Scale', kind: 'decimal' },
      ],
      rows: penguinRows,
    },
  ];
}
