/** Job ids, cron ticks and logical time in parameters (src/queue/names.ts, cron-ticks.ts, logical-time.ts). */
import { expect, it, vi } from 'vitest';
import { createTask } from 'node-cron';
import { cronTicks } from '../src/config/cron-ticks.ts';
import { formatZoned, hasTemplate, parseZonedDate, renderParameters } from '../src/pipeline/logical-time.ts';
import { compactIso, replayQueueJobId, tickQueueJobId } from '../src/queue/names.ts';
import { ConfigError } from '../src/errors.ts';

it('tickQueueJobId is deterministic, has no ":" and sorts like time', () => {
  const a = tickQueueJobId('sales.orders-1', new Date('2026-01-22T02:15:00Z'));
  expect(a).toBe('sales.orders-1__20260122T021500Z');
  expect(tickQueueJobId('j', new Date('2026-01-22T02:15:00.120Z'))).toBe('j__20260122T021500.120Z');
  expect(a).not.toContain(':');
  expect(compactIso(new Date('2026-01-22T02:15:01Z')) > compactIso(new Date('2026-01-22T02:15:00Z'))).toBe(true);
  const failed = '0e2f8d0c-5b1a-4f3e-9c7d-1a2b3c4d5e6f';
  expect(replayQueueJobId(a, failed)).toBe(`${a}__replay_${failed}`);
  // A replay of a replay keeps one suffix.
  expect(replayQueueJobId(replayQueueJobId(a, failed), 'aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee')).toBe(
    `${a}__replay_aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee`,
  );
});

it('cron ticks between two instants, in the job time zone, across a DST change', () => {
  const daily = cronTicks('15 2 * * *', 'Europe/Zurich');
  const { ticks } = daily.between(new Date('2026-03-27T00:00:00Z'), new Date('2026-03-31T00:00:00Z'));
  // 02:15 CET = 01:15Z; 2026-03-29 02:15 does not exist (clocks jump 02:00 -> 03:00); then CEST = 00:15Z.
  expect(ticks.map((t) => t.toISOString())).toEqual([
    '2026-03-27T01:15:00.000Z',
    '2026-03-28T01:15:00.000Z',
    '2026-03-30T00:15:00.000Z',
  ]);
  expect(daily.previous(new Date('2026-03-28T01:15:00Z'))?.toISOString()).toBe('2026-03-27T01:15:00.000Z');
  expect(daily.matches(new Date('2026-03-28T01:15:00Z'))).toBe(true);
  expect(daily.matches(new Date('2026-03-28T02:15:00Z'))).toBe(false);
  const fast = cronTicks('*/2 * * * * *', 'UTC');
  expect(fast.stepMs).toBe(1000);
  expect(fast.between(new Date('2026-01-01T00:00:00Z'), new Date('2026-01-01T00:00:10Z')).ticks).toHaveLength(5);
  const limited = fast.between(new Date('2026-01-01T00:00:00Z'), new Date('2026-01-01T00:00:10Z'), 2);
  expect(limited).toEqual({
    ticks: [new Date('2026-01-01T00:00:08Z'), new Date('2026-01-01T00:00:10Z')],
    truncated: true,
  });
  expect(() => cronTicks('61 * * * *', 'UTC')).toThrow(ConfigError);
});

it('renders %{...} templates in the job time zone; ${VAR} and literals stay', () => {
  const time = {
    tick: new Date('2026-01-22T05:00:00Z'),
    logicalStart: new Date('2026-01-21T05:00:00Z'),
    logicalEnd: new Date('2026-01-22T05:00:00Z'),
  };
  const out = renderParameters(
    {
      FROM: '%{logicalStart:yyyy-MM-dd}',
      TO: "%{logicalEnd:dd.MM.yyyy 'um' HH:mm}",
      AT: '%{tick}',
      LIT: '%%{tick} 100%',
      PLAIN: 'x',
    },
    time,
    'Asia/Tokyo',
  );
  expect(out).toEqual({
    FROM: '2026-01-21',
    TO: '22.01.2026 um 14:00',
    AT: '2026-01-22T05:00:00.000Z',
    LIT: '%{tick} 100%',
    PLAIN: 'x',
  });
  expect(hasTemplate('%{tick}')).toBe(true);
  expect(hasTemplate('%%{tick}')).toBe(false);
  expect(() => renderParameters({ FROM: '%{logicalstart:yyyy}' }, time, 'UTC', 'jobs.j.report.parameters')).toThrow(
    /jobs\.j\.report\.parameters\.FROM: unknown time "%\{logicalstart\}"/,
  );
  expect(formatZoned(new Date('2026-07-01T22:30:05.042Z'), 'yyyy-MM-dd HH:mm:ss.SSS', 'Europe/Zurich')).toBe(
    '2026-07-02 00:30:05.042',
  );
});

it('parses command-line dates in the job time zone', () => {
  expect(parseZonedDate('2026-01-31', 'Europe/Zurich').toISOString()).toBe('2026-01-30T23:00:00.000Z');
  expect(parseZonedDate('2026-07-31T06:00', 'Europe/Zurich').toISOString()).toBe('2026-07-31T04:00:00.000Z');
  expect(parseZonedDate('2026-07-31T06:00:00Z', 'Europe/Zurich').toISOString()).toBe('2026-07-31T06:00:00.000Z');
  expect(() => parseZonedDate('yesterday', 'UTC')).toThrow(ConfigError);
});

it('takes a time as the commands print it, and refuses a date that names no moment instead of rolling it over', () => {
  // docs/operations.md "Times": a printed time, with its offset or Z, can be pasted back.
  expect(parseZonedDate('2026-11-25 23:44:49+01:00', 'UTC').toISOString()).toBe('2026-11-25T22:44:49.000Z');
  expect(parseZonedDate('2026-11-25 22:44:49Z', 'Europe/Zurich').toISOString()).toBe('2026-11-25T22:44:49.000Z');
  expect(parseZonedDate('2026-11-25T22:44:49.5-0230', 'UTC').toISOString()).toBe('2026-11-26T01:14:49.500Z');
  expect(parseZonedDate('2026-07-31T06:00:00.250', 'Europe/Zurich').toISOString()).toBe('2026-07-31T04:00:00.250Z');
  expect(parseZonedDate('2028-02-29', 'UTC').toISOString()).toBe('2028-02-29T00:00:00.000Z');
  for (const [text, why] of [
    ['2026-13-01', 'there is no month 13'],
    ['2026-00-10', 'there is no month 0'],
    ['2026-02-29', '2026-02 has no day 29'],
    ['2026-04-31', '2026-04 has no day 31'],
    ['2026-11-26T25:00', 'hours go to 23'],
    ['2026-11-26T10:60', 'hours go to 23, minutes and seconds to 59'],
    ['2026-11-26T10:00+25:00', 'no such UTC offset'],
  ])
    expect(() => parseZonedDate(text!, 'UTC'), text).toThrow(`not a date: "${text}": ${why}`);
  // Text that Date would read some way (a bare number is a year, a weekday name is dropped) is no date here.
  for (const text of ['1', '2026', 'Thu Nov 26 2026', '26.11.2026', '2026-1-5'])
    expect(() => parseZonedDate(text, 'UTC'), text).toThrow(`not a date: "${text}" (write 2026-01-31`);
});

it("tick calculators do not stay in node-cron's task registry", async () => {
  const { getTasks } = await import('node-cron');
  const before = getTasks().size;
  for (let i = 0; i < 20; i++) cronTicks(`${i} 3 * * *`, 'UTC').previous(new Date('2026-01-02T00:00:00Z'));
  expect(getTasks().size).toBe(before);
  expect(cronTicks('7 3 * * *', 'UTC').previous(new Date('2026-01-02T00:00:00Z'))?.toISOString()).toBe(
    '2026-01-01T03:07:00.000Z',
  );
});

it(
  'reads ticks across DST in the job zone: a skipped local time has no tick, a repeated one a single one, ' +
    'the first, so that no interval is an hour of one day',
  () => {
    const daily = cronTicks('30 2 * * *', 'Europe/Zurich');
    // 29 March 2026: 02:00 CET jumps to 03:00 CEST, so 02:30 does not exist that day.
    expect(
      daily
        .between(new Date('2026-03-27T00:00:00Z'), new Date('2026-03-31T00:00:00Z'))
        .ticks.map((d) => d.toISOString()),
    ).toEqual(['2026-03-27T01:30:00.000Z', '2026-03-28T01:30:00.000Z', '2026-03-30T00:30:00.000Z']);
    // 25 October 2026: 03:00 CEST goes back to 02:00 CET, so 02:30 comes twice: its tick is the first.
    expect(
      daily
        .between(new Date('2026-10-24T00:00:00Z'), new Date('2026-10-27T00:00:00Z'))
        .ticks.map((d) => d.toISOString()),
    ).toEqual(['2026-10-24T00:30:00.000Z', '2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']);
    expect(daily.repeats(new Date('2026-10-25T01:30:00Z'))).toBe(true);
    expect(daily.repeats(new Date('2026-10-25T00:30:00Z'))).toBe(false);
    expect(daily.matches(new Date('2026-10-25T01:30:00Z'))).toBe(false);
    expect(daily.previous(new Date('2026-10-26T01:30:00Z'))?.toISOString()).toBe('2026-10-25T00:30:00.000Z');
    expect(daily.next(new Date('2026-10-25T00:30:00Z'))?.toISOString()).toBe('2026-10-26T01:30:00.000Z');
    expect(daily.firstOf(new Date('2026-10-25T01:30:00Z')).toISOString()).toBe('2026-10-25T00:30:00.000Z');
    expect(daily.firstOf(new Date('2026-10-25T00:30:00Z')).toISOString()).toBe('2026-10-25T00:30:00.000Z');
    // An hourly schedule: 02:15 CEST, then 03:15 CET two hours later; 02:15 CET is no tick.
    const hourly = cronTicks('15 * * * *', 'Europe/Zurich');
    expect(
      hourly
        .between(new Date('2026-10-24T23:00:00Z'), new Date('2026-10-25T03:00:00Z'))
        .ticks.map((d) => d.toISOString()),
    ).toEqual(['2026-10-24T23:15:00.000Z', '2026-10-25T00:15:00.000Z', '2026-10-25T02:15:00.000Z']);
    // Elsewhere and in UTC nothing repeats.
    expect(cronTicks('15 * * * *', 'UTC').repeats(new Date('2026-10-25T01:15:00Z'))).toBe(false);
    expect(cronTicks('15 * * * *', 'America/New_York').repeats(new Date('2026-11-01T06:15:00Z'))).toBe(true);
    expect(cronTicks('15 * * * *', 'America/New_York').repeats(new Date('2026-11-01T05:15:00Z'))).toBe(false);
  },
);

it('finds the previous tick of a schedule years apart (29 February), where a scan of a year found none', () => {
  const leap = cronTicks('0 0 29 2 *', 'UTC');
  expect(leap.previous(new Date('2028-02-29T00:00:00Z'))?.toISOString()).toBe('2024-02-29T00:00:00.000Z');
  expect(leap.matches(new Date('2028-02-29T00:00:30Z'))).toBe(true);
  expect(leap.matches(new Date('2027-03-01T00:00:00Z'))).toBe(false);
  expect(
    leap.between(new Date('2023-01-01T00:00:00Z'), new Date('2029-01-01T00:00:00Z')).ticks.map((d) => d.toISOString()),
  ).toEqual(['2024-02-29T00:00:00.000Z', '2028-02-29T00:00:00.000Z']);
});

it('moves a template by an offset: d in calendar days of the job zone, h and min exactly', () => {
  const time = {
    tick: new Date('2026-04-01T00:15:00Z'),
    logicalStart: new Date('2026-03-31T00:15:00Z'),
    logicalEnd: new Date('2026-04-01T00:15:00Z'),
  };
  const out = renderParameters(
    {
      FROM: '%{logicalEnd-7d:yyyy-MM-dd}',
      // 7 days before 02:15 CEST on 1 April is 02:15 CET on 25 March: 167 hours across the DST change.
      FROM_ISO: '%{logicalEnd-7d}',
      LATER: '%{logicalStart+2h:HH:mm}',
      EARLIER: '%{tick-30min:HH:mm}',
      NO_OFFSET: '%{logicalEnd:yyyy-MM-dd HH:mm}',
    },
    time,
    'Europe/Zurich',
  );
  expect(out).toEqual({
    FROM: '2026-03-25',
    FROM_ISO: '2026-03-25T01:15:00.000Z',
    LATER: '04:15',
    EARLIER: '01:45',
    NO_OFFSET: '2026-04-01 02:15',
  });
  expect(() =>
    renderParameters({ FROM: '%{logicalEnd-7w:yyyy}', TO: '%{logicalEnd - 1d}' }, time, 'UTC', 'jobs.j.p'),
  ).toThrow(
    new ConfigError([
      'jobs.j.p.FROM: malformed time "%{logicalEnd-7w}" in "%{logicalEnd-7w:yyyy}" (write a name and an optional ' +
        'offset, e.g. %{logicalEnd-7d:yyyy-MM-dd}; units d, h, min)',
      'jobs.j.p.TO: malformed time "%{logicalEnd - 1d}" in "%{logicalEnd - 1d}" (write a name and an optional ' +
        'offset, e.g. %{logicalEnd-7d:yyyy-MM-dd}; units d, h, min)',
    ]),
  );
});

it('node-cron fires a repeated local time once, at its second coming, which the scheduler maps back', async () => {
  // What the scheduler relies on (scheduler.ts onTick): in Europe/Zurich on 25 October 2026, 02:15 comes at 00:15Z
  // (CEST) and 01:15Z (CET); node-cron fires 01:15Z alone, the hourly task skips 00:15Z.
  vi.useFakeTimers({ now: new Date('2026-10-24T22:00:00Z') });
  const fired = { daily: [] as string[], hourly: [] as string[] };
  const zurich = { timezone: 'Europe/Zurich' };
  const tasks = [
    createTask('15 2 * * *', (ctx) => void fired.daily.push(ctx.date.toISOString()), zurich),
    createTask('15 * * * *', (ctx) => void fired.hourly.push(ctx.date.toISOString()), zurich),
  ];
  try {
    for (const t of tasks) await t.start();
    await vi.advanceTimersByTimeAsync(5 * 3_600_000);
  } finally {
    for (const t of tasks) await t.destroy();
    vi.useRealTimers();
  }
  expect(fired.daily).toEqual(['2026-10-25T01:15:00.000Z']);
  expect(fired.hourly).toEqual([
    '2026-10-24T22:15:00.000Z',
    '2026-10-24T23:15:00.000Z',
    '2026-10-25T01:15:00.000Z',
    '2026-10-25T02:15:00.000Z',
  ]);
  // Mapped to their first coming, the firings are the ticks cronTicks counts.
  const hourly = cronTicks('15 * * * *', 'Europe/Zurich');
  const mapped = fired.hourly.map((t) => hourly.firstOf(new Date(t)).toISOString());
  const counted = hourly.between(new Date('2026-10-24T22:00:00Z'), new Date('2026-10-25T03:00:00Z')).ticks;
  expect(counted.map((d) => d.toISOString())).toEqual([
    '2026-10-24T22:15:00.000Z',
    '2026-10-24T23:15:00.000Z',
    '2026-10-25T00:15:00.000Z',
    '2026-10-25T02:15:00.000Z',
  ]);
  expect(mapped).toEqual(counted.map((d) => d.toISOString()));
});
