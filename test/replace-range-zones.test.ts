/**
 * Which zone a `target.replaceRange` bound is rendered in and which one reads it (docs/loaded-tables.md "Bounds and
 * time zones"), against the simulator over HTTP and a real PostgreSQL: the bounds are rendered in the job's zone, like
 * the report's parameters, and read as the ERP reads those parameters: a date as a date, a time without offset on the
 * connection's clock (the ERP's). So the period replaced is the period the report returned, also for a job whose zone
 * is not its connection's and across a DST change. Each test puts marker rows just inside and just outside the period,
 * and at the moments the same labels would name in the job's zone, and looks which ones the run replaced.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { resolveJob } from '../src/config/load.ts';
import { reportData, type ReportData } from '../src/simulator/catalogue.ts';
import { logicalTimeOf, runRange } from '../src/pipeline/logical-time.ts';
import { columnTypes, jobEntry, loadedRows, servedRows, startHarness, type Harness } from './support/harness.ts';

/** The window asked of the report and replaced: the three days before the night's tick, as dates of its zone. */
const FROM = '%{logicalEnd-3d:yyyy-MM-dd}';
const TO = '%{logicalEnd:yyyy-MM-dd}';

/** A harness per simulated ERP zone (the zone it writes its times in; the simulator reads FROM/TO as its days). */
const harnesses = new Map<string, Harness>();
beforeAll(async () => {
  for (const zone of ['UTC', 'Europe/Zurich']) harnesses.set(zone, await startHarness({ timezone: zone }));
});
afterAll(async () => {
  for (const h of harnesses.values()) await h.close();
});
afterEach(() => {
  for (const h of harnesses.values()) {
    const c = h.sim.counters();
    expect(c.openJobs).toEqual([]);
    expect(c.jobsDeleted).toBe(c.jobsCreated);
  }
});

/** The rows of a report of text and decimal columns, as {@link loadedRows} gives them. */
function served(data: ReportData): string[] {
  return Array.from({ length: data.rowCount }, (_, i) => JSON.stringify(data.row(i))).sort();
}

interface Setup {
  /** The ERP's zone: the simulator's, and the connection's `timezone`. */
  erpZone: string;
  /** The job's own `timezone`: its schedule's, the zone its templates are rendered in. */
  jobZone: string;
  /** Finance/Ledger.avx (FROM/TO filter the timestamps "Valuta") or Finance/Bookings (the dates "Buchungstag"). */
  report: 'ledger' | 'bookings';
  /** The range column's declared type; else the type the report's values infer. */
  type?: string;
}

const REPORTS = {
  ledger: { name: 'Finance/Ledger.avx', column: 'valuta', nr: '-1', extra: { ROWS: '300' } },
  bookings: { name: 'Finance/Bookings.avw', column: 'buchungstag', nr: "'marker'", extra: {} },
} as const;

/**
 * Runs the nightly job (02:15 in its zone, reading and replacing the three days before) of `tick` twice: the first
 * run creates the table, then `markers` (name → a value of the range column, read in the ERP's zone) are inserted and
 * the second run replaces the period. Checks that the table then holds exactly the report's rows besides the markers.
 * @returns the range the run rendered, the range column's type and the names of the markers the run left
 */
async function replaceAround(s: Setup, tick: string, markers: Record<string, string>) {
  const h = harnesses.get(s.erpZone)!;
  const report = REPORTS[s.report];
  const table = `${h.schema}.${s.report}_${s.jobZone.replace(/\W/g, '_')}_${s.type ?? 'inferred'}`.toLowerCase();
  const config = h.config(
    {
      night: {
        ...jobEntry(
          { name: report.name, outputType: 'json', parameters: { FROM, TO, ...report.extra } },
          {
            table,
            mode: 'replace',
            ...(s.type ? { columns: { [report.column]: s.type } } : {}),
            replaceRange: { column: report.column, from: FROM, to: TO },
          },
        ),
        schedule: '15 2 * * *',
        timezone: s.jobZone,
      },
    },
    { timezone: s.erpZone },
  );
  const request = { scheduledFor: tick, trigger: 'schedule' as const };
  const resolved = resolveJob(config, 'night');
  const range = runRange(resolved, logicalTimeOf(resolved, request, new Date()))!;
  expect((await h.run(config, 'night', request)).status).toBe('succeeded');
  const type = (await columnTypes(h.pool, table))[report.column]!;
  const db = await h.pool.connect();
  try {
    await db.query('BEGIN');
    await db.query(`SELECT set_config('TimeZone', $1, true)`, [s.erpZone]);
    for (const [name, value] of Object.entries(markers))
      await db.query(
        `INSERT INTO ${table} (buchung_nr, ${report.column}, text) VALUES (${report.nr}, $1::${type}, $2)`,
        [value, `marker ${name}`],
      );
    await db.query('COMMIT');
  } finally {
    db.release();
  }
  expect((await h.run(config, 'night', request)).status).toBe('succeeded');
  const { rows } = await h.pool.query<{ t: string }>(
    `DELETE FROM ${table} WHERE text LIKE 'marker %' RETURNING text AS t`,
  );
  const left = rows.map((r) => r.t.slice('marker '.length)).sort();
  const params = { FROM: range.from, TO: range.to, ...report.extra };
  const expected =
    s.report === 'ledger'
      ? servedRows(report.name, params, 1)
      : served(reportData(report.name, params, 1, { mandant: '7777', revision: 0 })!);
  expect(await loadedRows(h.pool, table, report.name, params)).toEqual(expected);
  return { range: { from: range.from, to: range.to }, type, left };
}

describe('replaceRange bounds and time zones', () => {
  // Pacific/Auckland leaves daylight saving time on 5 April 2026 (03:00 NZDT becomes 02:00 NZST): the night of
  // 6 April 02:15 NZST is 5 April 14:15 UTC, and its window's labels are New Zealand's dates, a day after UTC's.
  const aucklandNight = '2026-04-05T14:15:00.000Z';
  /** Markers around [3 Apr, 6 Apr) of UTC, and where the labels would fall read in Auckland (NZDT, then NZST). */
  const aroundUtcDays = {
    'job zone from': '2026-04-02 11:00',
    'before from': '2026-04-02 23:59:59.999',
    from: '2026-04-03 00:00',
    'job zone to': '2026-04-05 12:00',
    'before to': '2026-04-05 23:59:59.999',
    to: '2026-04-06 00:00',
  };

  it(
    'timestamptz, job zone ≠ connection zone, over a DST change of the job zone: bounds rendered in the job zone, ' +
      "read on the connection's clock, as the ERP reads the report's FROM/TO",
    async () => {
      const setup: Setup = { erpZone: 'UTC', jobZone: 'Pacific/Auckland', report: 'ledger' };
      const { range, type, left } = await replaceAround(setup, aucklandNight, aroundUtcDays);
      expect(range).toEqual({ from: '2026-04-03', to: '2026-04-06' });
      expect(type).toBe('timestamp with time zone');
      // Read in Auckland the bounds would keep 5 Apr 12:00–24:00 UTC, where the ERP's rows of that day lie too.
      expect(left).toEqual(['before from', 'job zone from', 'to']);
    },
  );

  it('timestamp (without time zone): the bounds are wall-clock times, compared as written', async () => {
    const setup: Setup = { erpZone: 'UTC', jobZone: 'Pacific/Auckland', report: 'ledger', type: 'timestamp' };
    const { range, type, left } = await replaceAround(setup, aucklandNight, aroundUtcDays);
    expect(range).toEqual({ from: '2026-04-03', to: '2026-04-06' });
    expect(type).toBe('timestamp without time zone');
    expect(left).toEqual(['before from', 'job zone from', 'to']);
  });

  it('date: the bounds are the days the report returns, whatever the zones', async () => {
    const setup: Setup = { erpZone: 'UTC', jobZone: 'Pacific/Auckland', report: 'bookings' };
    const { range, type, left } = await replaceAround(setup, aucklandNight, {
      'day before': '2026-04-02',
      from: '2026-04-03',
      'last day': '2026-04-05',
      to: '2026-04-06',
    });
    expect(range).toEqual({ from: '2026-04-03', to: '2026-04-06' });
    expect(type).toBe('date');
    expect(left).toEqual(['day before', 'to']);
  });

  it("timestamptz over a DST day of the connection's zone: its 23-hour day is replaced, not UTC's day", async () => {
    // Europe/Zurich moves to summer time on 29 March 2026: the day from 00:00 CET (28 Mar 23:00 UTC) to 00:00 CEST
    // (29 Mar 22:00 UTC). The job's zone is UTC, so its night of 30 March 02:15 UTC renders [27 Mar, 30 Mar).
    const setup: Setup = { erpZone: 'Europe/Zurich', jobZone: 'UTC', report: 'ledger' };
    const { range, left } = await replaceAround(setup, '2026-03-30T02:15:00.000Z', {
      'before from': '2026-03-26 23:59:59.999',
      from: '2026-03-27 00:00',
      'before to': '2026-03-29 23:59:59.999',
      to: '2026-03-30 00:00',
      // Read in the job's zone (UTC) the period would end an hour after its local midnight.
      'job zone to': '2026-03-30 01:00',
    });
    expect(range).toEqual({ from: '2026-03-27', to: '2026-03-30' });
    expect(left).toEqual(['before from', 'job zone to', 'to']);
  });
});
