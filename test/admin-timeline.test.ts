/**
 * The timeline as stored and drawn (history/timeline.ts, admin/timeline-chart.ts), without a browser: thousands of
 * pages are kept as at most MAX_PAGE_ENTRIES groups and the page says so; where the time went adds up; what is not a
 * timeline of this version is not drawn, and every text is escaped.
 */
import { expect, it } from 'vitest';
import { axisTicks, formatTick, timelineChart } from '../src/admin/timeline-chart.ts';
import { html } from '../src/admin/html.ts';
import {
  MAX_PAGE_ENTRIES,
  PageEntries,
  readTimeline,
  timeSpent,
  type AttemptTimeline,
  type TimelinePage,
} from '../src/history/timeline.ts';

function page(n: number, t: number): TimelinePage {
  return {
    page: n,
    req: t,
    hdr: t + 1,
    start: t + 1,
    end: t + 4,
    wait: 0.5,
    net: 1,
    decode: 1,
    copy: 1,
    rows: 10,
    bytes: 100,
  };
}

function timeline(pages: number): AttemptTimeline {
  const entries = new PageEntries();
  for (let i = 1; i <= pages; i++) entries.add(page(i, 100 + i * 4));
  return {
    v: 1,
    start: '2026-11-24T02:15:00.000Z',
    ms: 100 + pages * 4 + 20,
    steps: [
      { step: 'slot', at: 0, ms: 10 },
      { step: 'record', at: 10, ms: 5 },
      { step: 'token', at: 15, ms: 5 },
      { step: 'start', at: 20, ms: 10 },
      { step: 'render', at: 30, ms: 70, polls: 3 },
      { step: 'load', at: 100, ms: pages * 4 + 10 },
      { step: 'copy', at: 101, ms: pages * 4 },
      { step: 'commit', at: 100 + pages * 4 + 2, ms: 8 },
      { step: 'delete', at: 100 + pages * 4 + 10, ms: 10 },
    ],
    pages: entries.entries,
    pagesRead: pages,
    ...(entries.group > 1 ? { pageGroup: entries.group } : {}),
  };
}

const chart = (t: unknown, status = 'succeeded') =>
  timelineChart([
    {
      heading: html`Attempt 1`,
      status,
      startedAt: new Date('2026-11-24T02:15:00Z'),
      finishedAt: new Date('2026-11-24T02:16:00Z'),
      timeline: t,
    },
  ]).value;

it(
  'keeps the pages of a long report as at most MAX_PAGE_ENTRIES groups of consecutive ' +
    'pages, and says so on the page',
  () => {
    const t = timeline(5000);
    expect(t.pages.length).toBeLessThanOrEqual(MAX_PAGE_ENTRIES);
    expect(t.pageGroup).toBe(64);
    expect(t.pages[0]).toMatchObject({ page: 1, to: 64, req: 104, rows: 640, bytes: 6400, net: 64 });
    expect(t.pages.at(-1)!.to).toBe(5000);
    expect(t.pages.reduce((n, p) => n + p.rows, 0)).toBe(50_000);
    expect(JSON.stringify(t).length).toBeLessThan(16_000);
    const out = chart(t);
    expect(out).toContain('5,000 pages were read: drawn as 79 rows of up to 64 consecutive pages each');
    expect(out.match(/<g class="tl-page/g)).toHaveLength(t.pages.length);
    expect(out).toContain('<title>pages 1–64: 640 rows, 6.3 KiB.');
    // Fewer pages than the cap: one entry each.
    expect(timeline(50).pages).toHaveLength(50);
    expect(timeline(50).pageGroup).toBeUndefined();
  },
);

it("splits an attempt's time by whom it waited for, adding up to its whole time", () => {
  const t = timeline(10);
  const spent = timeSpent(t);
  expect(spent).toEqual({
    slot: 10,
    server: 5 + 10 + 70 + 10 + 10 * 0.5,
    network: 10,
    decode: 10,
    database: 5 + (50 - 5 - 10 - 10),
    other: 0,
    total: 160,
  });
  expect(spent.slot + spent.server + spent.network + spent.decode + spent.database + spent.other).toBe(spent.total);
  expect(chart(t)).toMatch(/From its slot wait to its DELETE, 160 ms: .*server 100 ms <span class="muted">\(63 %\)/);
});

it('draws nothing it cannot read, and escapes what it draws', () => {
  expect(readTimeline({ v: 2, start: '2026-11-24T02:15:00Z', ms: 1, steps: [], pages: [] })).toBeUndefined();
  const hostile = {
    ...timeline(1),
    steps: [
      { step: '<script>alert(1)</script>', at: 0, ms: 1 },
      { step: 'render', at: 1, ms: '"><img src=x>' },
    ],
  };
  const read = readTimeline(hostile)!;
  expect(read.steps).toEqual([]);
  const out = chart(hostile);
  expect(out).not.toContain('<script');
  expect(out).not.toContain('<img');
  // An attempt without a timeline (running, or from before migration 0011) is one bar that says why.
  expect(chart(null, 'running')).toContain('running: its timeline is written when it ends');
  expect(chart(null, 'failed')).toContain('no timeline recorded');
});

it('labels the time axis with round, short values', () => {
  expect(axisTicks(2_200).map(formatTick)).toEqual(['0', '500 ms', '1 s', '1.5 s', '2 s']);
  expect(axisTicks(14 * 60_000).map(formatTick)).toEqual(['0', '5 min', '10 min']);
  expect(axisTicks(0)).toEqual([0]);
});

it('draws each attempt on its own time axis, so that a short attempt minutes after another stays legible', () => {
  const first = timeline(10);
  const second = { ...timeline(10), start: '2026-11-24T02:17:00.000Z' };
  const out = timelineChart([
    {
      heading: html`Attempt 1`,
      status: 'failed',
      startedAt: new Date(first.start),
      finishedAt: new Date(Date.parse(first.start) + first.ms),
      timeline: first,
    },
    {
      heading: html`Attempt 2`,
      status: 'succeeded',
      startedAt: new Date(second.start),
      finishedAt: new Date(Date.parse(second.start) + second.ms),
      timeline: second,
    },
  ]).value;
  // Two axes of 160 ms each, not one of two minutes: ticks of 50 ms under each attempt.
  expect(out.match(/<svg class="tl-axis"/g)).toHaveLength(2);
  expect(out.match(/>50 ms<\/text>/g)).toHaveLength(2);
  expect(out).not.toContain('>1 min<');
  // The second attempt's first step starts at the left edge and its DELETE ends at the right, as the first one's do.
  const slots = [...out.matchAll(/<rect class="tl-slot" x="([\d.]+)"/g)].map((m) => Number(m[1]));
  expect(slots).toEqual([0, 0]);
  const deletes = [
    ...out.matchAll(/<rect class="tl-server" x="([\d.]+)" y="\d+" width="([\d.]+)" height="12"><title>DELETE job/g),
  ];
  expect(deletes.map((m) => Number(m[1]) + Number(m[2]))).toEqual([1000, 1000]);
});

it('says what an interrupted attempt without a timeline had done and where it stopped', () => {
  const attempt = (done: Parameters<typeof timelineChart>[0][number]['done']) =>
    timelineChart([
      {
        heading: html`Attempt 1`,
        status: 'interrupted',
        startedAt: new Date('2026-11-24T02:15:00Z'),
        finishedAt: new Date('2026-11-24T02:15:11.900Z'),
        timeline: null,
        done,
      },
    ]).value;
  const loaded = attempt({ pages: 33, rows: '1650', reportJobStarted: true });
  expect(loaded).toContain(
    '<strong>Done before it stopped:</strong> 33 pages read, 1,650 rows; nothing committed; it stopped after ' +
      'starting its report job (rendering or loading); recorded ended 11.9 s after its start.',
  );
  // Rows 0 (its load rolled back) are not said as if it had read no rows.
  expect(attempt({ pages: 20, rows: '0', reportJobStarted: true })).toContain('20 pages read; nothing committed;');
  const unknown = attempt({ pages: null, rows: null, reportJobStarted: false });
  expect(unknown).toContain('no pages or rows recorded (its process ended before it could record them)');
  expect(unknown).toContain('it stopped before starting a report job');
  // Its own axis: 11.9 s long, not a sliver of a longer one.
  expect(unknown).toContain('>10 s</text>');
});

it('says of a running attempt whose server still renders its report how many polls it made, not "page 0"', () => {
  const progress = { page: 0, pagesRead: 0, pages: null, rows: 0, polls: 12, at: '2026-11-24T02:15:30.000Z' };
  const out = timelineChart(
    [
      {
        heading: html`Attempt 1`,
        status: 'running',
        startedAt: new Date('2026-11-24T02:15:00Z'),
        finishedAt: null,
        timeline: null,
        done: { pages: null, rows: null, reportJobStarted: true, progress },
      },
    ],
    { now: new Date('2026-11-24T02:16:00Z') },
  ).value;
  expect(out).toContain(
    '<strong>So far:</strong> the server renders the report (12 polls so far) (as last recorded, 30.0 s after its ' +
      'start); nothing committed yet.',
  );
  expect(out).not.toContain('page 0');
});
