/**
 * Replacing one period (docs/loaded-tables.md "Replacing one period"), against the simulator over HTTP and a real
 * PostgreSQL: a nightly 7-day sliding window over a server whose bookings change between runs leaves the table equal
 * to what the server holds for every day, with days outside the window untouched; a run row outside its range fails
 * the run with RANGE_VIOLATION and the table as it was; maxShrinkPercent measures against the range's rows.
 */
import { describe, expect, it } from 'vitest';
import { listRunErrors } from '../src/history/attempt-list.ts';
import { reportData } from '../src/simulator/catalogue.ts';
import { attemptFailure, columnTypes, jobEntry, useHarness } from './support/harness.ts';

const h = useHarness();
const BOOKINGS = 'Finance/Bookings.avw';
const DAY_MS = 86_400_000;

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The server's bookings of one day at `revision`, as `nr|day|betrag|text` lines. */
function served(d: string, revision: number): string[] {
  const next = day(Date.parse(d) + DAY_MS);
  const data = reportData(BOOKINGS, { FROM: d, TO: next }, 1, { mandant: '7777', revision })!;
  return Array.from({ length: data.rowCount }, (_, i) => data.row(i).join('|'));
}

/** The table's rows as `nr|day|betrag|text` lines, sorted. */
async function loaded(table: string): Promise<string[]> {
  const { rows } = await h.pool.query<{ r: string }>(
    `SELECT concat_ws('|', buchung_nr, buchungstag::text, betrag::text, text) AS r FROM ${table}`,
  );
  return rows.map((r) => r.r).sort();
}

/** A nightly job reading the last `days` days, replacing the range [logicalEnd - range, logicalEnd). */
function nightly(table: string, o: { days?: number; range?: number; guard?: Record<string, unknown> } = {}) {
  const from = (n: number) => `%{logicalEnd-${n}d:yyyy-MM-dd}`;
  const to = '%{logicalEnd:yyyy-MM-dd}';
  return h.config({
    bookings: {
      ...jobEntry(
        { name: 'Finance/Bookings', outputType: 'json', parameters: { FROM: from(o.days ?? 7), TO: to } },
        {
          table,
          mode: 'replace',
          columns: { buchungstag: 'date' },
          replaceRange: { column: 'buchungstag', from: from(o.range ?? 7), to },
          ...(o.guard ? { guard: o.guard } : {}),
        },
      ),
      schedule: '0 3 * * *',
      timezone: 'UTC',
    },
  });
}

const tick = (n: number) => new Date(Date.UTC(2026, 0, 10 + n, 3)).toISOString();

describe('target.replaceRange', () => {
  it(
    'a 7-day sliding window run every night over changing data leaves the table equal to the server for every ' +
      'day: no duplicate, no stale row, days outside the window untouched',
    async () => {
      const table = `${h.schema}.bookings_sliding`;
      const config = nightly(table);
      // The revision each day was last read at: the table must hold exactly the server's rows of that revision.
      const readAt = new Map<string, number>();
      for (let n = 0; n < 6; n++) {
        h.sim.setRevision(n);
        const result = await h.run(config, 'bookings', { scheduledFor: tick(n), trigger: 'schedule' });
        expect(result.status).toBe('succeeded');
        const end = Date.parse(tick(n));
        for (let k = 1; k <= 7; k++) readAt.set(day(end - k * DAY_MS), n);
        const expected = [...readAt].flatMap(([d, revision]) => served(d, revision)).sort();
        expect(await loaded(table)).toEqual(expected);
        expect(new Set(expected).size).toBe(expected.length);
      }
      // The revisions really changed the window's days: corrected, added and deleted bookings.
      const first = served('2026-01-09', 4);
      const last = served('2026-01-09', 5);
      expect(first).not.toEqual(last);
      const nr = (l: string) => l.split('|')[0];
      expect(first.some((l) => !last.map(nr).includes(nr(l)))).toBe(true);
      expect(last.some((l) => !first.map(nr).includes(nr(l)))).toBe(true);
      // Days read by the first runs only kept the revision they were read at.
      expect(readAt.get('2026-01-03')).toBe(0);
      expect((await columnTypes(h.pool, table)).buchungstag).toBe('date');
    },
  );

  it('a run row outside its range fails with RANGE_VIOLATION naming row and value; the table stays', async () => {
    const table = `${h.schema}.bookings_violation`;
    await h.run(nightly(table), 'bookings', { scheduledFor: tick(0), trigger: 'schedule' });
    const before = await loaded(table);
    // The report reads 8 days but the range is 7: the oldest day's bookings lie outside it.
    const failed = await attemptFailure(
      h.run(nightly(table, { days: 8 }), 'bookings', { scheduledFor: tick(1), trigger: 'schedule' }),
    );
    expect(failed.code).toBe('RANGE_VIOLATION');
    expect(failed.retryable).toBe(false);
    expect(failed.message).toMatch(
      /^page 1, row \d+ of the run has buchungstag \(report column "Buchungstag"\) "2026-01-03", outside the run's /,
    );
    expect(failed.message).toContain(
      `range [2026-01-04, 2026-01-11) of target.replaceRange: ${table} is left as it was`,
    );
    const [recorded] = await listRunErrors(h.pool, failed.attemptId);
    expect(recorded).toMatchObject({
      error_kind: 'RANGE_VIOLATION',
      stage: 'load',
      details: { column: 'buchungstag', value: '2026-01-03', from: '2026-01-04', to: '2026-01-11' },
    });
    expect(await loaded(table)).toEqual(before);
  });

  it('maxShrinkPercent measures against the rows of the range, not the whole table', async () => {
    const table = `${h.schema}.bookings_guard`;
    await h.run(nightly(table), 'bookings', { scheduledFor: tick(0), trigger: 'schedule' });
    // Many old rows outside the range, and the range padded so that the next run would shrink it by more than half.
    await h.pool.query(
      `INSERT INTO ${table} (buchung_nr, buchungstag, betrag, text)
       SELECT 'old-' || g, date '2025-01-01' + (g % 300), 1, 'old' FROM generate_series(1, 5000) g`,
    );
    await h.pool.query(
      `INSERT INTO ${table} (buchung_nr, buchungstag, betrag, text)
       SELECT 'pad-' || g, date '2026-01-05', 1, 'pad' FROM generate_series(1, 100) g`,
    );
    const before = await loaded(table);
    const guarded = nightly(table, { guard: { maxShrinkPercent: 50 } });
    const err = await attemptFailure(h.run(guarded, 'bookings', { scheduledFor: tick(1), trigger: 'schedule' }));
    expect(err.code).toBe('GUARD_TRIPPED');
    expect(err.message).toMatch(
      new RegExp(`where ${table} \\(buchungstag in \\[2026-01-04, 2026-01-11\\)\\) holds 1\\d\\d, `),
    );
    expect(await loaded(table)).toEqual(before);
  });

  it(
    'an empty period deletes the range alone, compared in the connection zone; a bound the column cannot read ' +
      'fails with CONFIG_INVALID',
    async () => {
      const table = `${h.schema}.orders_period`;
      const orders = (rows: string, from: string, to: string) =>
        h.config({
          o: jobEntry(
            {
              name: 'Sales/Orders',
              outputType: 'json',
              parameters: { ROWS: rows, FROM: '2024-01-01', TO: '2024-01-11' },
            },
            { table, replaceRange: { column: 'erfasst_am', from, to }, guard: { minRows: 0 } },
          ),
        });
      await h.run(orders('200', '2024-01-01', '2024-01-11'), 'o');
      const earlier = `erfasst_am < timestamptz '2024-01-05 00:00+01'`;
      const kept = Number((await h.pool.query(`SELECT count(*) AS n FROM ${table} WHERE ${earlier}`)).rows[0].n);
      expect(kept).toBeGreaterThan(0);
      expect(kept).toBeLessThan(200);

      const bad = await attemptFailure(h.run(orders('0', '2024-Q1', '2024-01-11'), 'o'));
      expect(bad.code).toBe('CONFIG_INVALID');
      expect(bad.message).toContain(
        'target.replaceRange.from rendered "2024-Q1", which is not a value of column erfasst_am (type timestamp with ' +
          'time zone)',
      );
      expect(Number((await h.pool.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n)).toBe(200);

      expect((await h.run(orders('0', '2024-01-05', '2024-01-11'), 'o')).status).toBe('succeeded');
      const { rows } = await h.pool.query<{ n: string; outside: string }>(
        `SELECT count(*) AS n, count(*) FILTER (WHERE ${earlier}) AS outside FROM ${table}`,
      );
      expect(rows[0]).toEqual({ n: String(kept), outside: String(kept) });
    },
  );
});
