/**
 * The look-ahead of pipeline/report-rows.ts: page n+1 is asked for while page n is still being read, at
 * most one page ahead, every page's rows arrive once and in order, and a read that ends early (a failure, an abort,
 * close()) closes the body of the page asked for ahead. Against the simulator over real HTTP.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { silentLogger } from '../src/logger.ts';
import { makePageDecoder } from '../src/pages/decoder.ts';
import { reportRows } from '../src/pipeline/report-rows.ts';
import { makeReportClient, withReportJob, type ReportClient } from '../src/report-api/index.ts';
import type { PageStream } from '../src/report-api/types.ts';
import { startSimulator, type Simulator } from '../src/simulator/index.ts';
import { REDIS_URL, uniqueName } from './support/env.ts';
import { testConnection } from './fixtures/report-api-helpers.ts';

const prefix = `${uniqueName('look_ahead')}:`;
let redis: Redis;
let sim: Simulator;
let client: ReportClient;

/** What a recording client saw: each event in order, and the bodies it handed out, by page. */
interface Recorded {
  events: string[];
  bodies: Map<number, PageStream['body']>;
}

/**
 * `client` with openPage recorded: `request N` when asked, `end N` when page N's body ended, `closed N` when destroyed
 * unread, `cut N` when its request was cut before the answer came.
 */
function recording(): { client: ReportClient; seen: Recorded } {
  const seen: Recorded = { events: [], bodies: new Map() };
  const wrapped = Object.create(client) as ReportClient;
  wrapped.openPage = async (jobId, page, signal) => {
    seen.events.push(`request ${page}`);
    const stream = await client.openPage(jobId, page, signal).catch((err: unknown) => {
      seen.events.push(`cut ${page}`);
      throw err;
    });
    if (stream) {
      seen.bodies.set(page, stream.body);
      stream.body.once('end', () => seen.events.push(`end ${page}`));
      stream.body.once('close', () => {
        if (!stream.body.readableEnded) seen.events.push(`closed ${page}`);
      });
    }
    return stream;
  };
  return { client: wrapped, seen };
}

const REQ = { mandant: '7777', name: 'Sales/Orders', outputType: 'json' as const, paging: 250, parameters: {} };
/** Pages of a few MB, read in many chunks, so that a run can be aborted in the middle of one. */
const BIG = {
  mandant: '7777',
  name: 'Big',
  outputType: 'json' as const,
  paging: 10_000,
  parameters: { ROWS: '40000' },
};

beforeAll(async () => {
  redis = new Redis(REDIS_URL);
  sim = await startSimulator({ port: 0, jobDurationMs: 10 });
  client = await makeReportClient({
    connection: testConnection(sim.url),
    connectionName: 'look_ahead',
    redis,
    keyPrefix: prefix,
  });
});
afterAll(async () => {
  await client.close();
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  await sim.close();
});

it(
  'asks for page n+1 before page n is read to its end, one page ahead at most, ' + 'and delivers every row once',
  async () => {
    const { client: c, seen } = recording();
    const rows = await withReportJob(client, REQ, async (f) => {
      const source = reportRows(c, f.jobId, () => makePageDecoder('json'), silentLogger);
      await source.open(() => ({ inspect: false }));
      let text = '';
      for await (const chunk of source.rows()) text += chunk.toString();
      await source.close();
      expect(source.pages).toBe(f.pages);
      return text.split('\n').filter(Boolean);
    });
    expect(rows).toHaveLength(2500);
    expect(new Set(rows).size).toBe(2500);
    // 10 pages and the 404 after them; page n+1 is requested before page n ends, page n+2 only after it.
    for (let n = 1; n <= 10; n++) {
      expect(seen.events.indexOf(`request ${n + 1}`), seen.events.join(', ')).toBeLessThan(
        seen.events.indexOf(`end ${n}`),
      );
      if (n > 1)
        expect(seen.events.indexOf(`request ${n + 1}`), seen.events.join(', ')).toBeGreaterThan(
          seen.events.indexOf(`end ${n - 1}`),
        );
    }
    expect(seen.events.filter((e) => e.startsWith('request'))).toHaveLength(11);
    expect(seen.events.filter((e) => e.startsWith('closed'))).toEqual([]);
  },
);

it(
  'closes the body of the page asked for ahead, or cuts its request, ' +
    'when the reader stops early (close after the first rows)',
  async () => {
    const { client: c, seen } = recording();
    await withReportJob(client, REQ, async (f) => {
      const source = reportRows(c, f.jobId, () => makePageDecoder('json'), silentLogger);
      await source.open(() => ({ inspect: false }));
      for await (const _ of source.rows()) break;
      await source.close();
    });
    // Its answer had come (its body is closed unread) or not yet (its request is cut, not left waiting for it).
    await expect.poll(() => seen.events.filter((e) => e === 'closed 2' || e === 'cut 2')).toHaveLength(1);
    expect(seen.events).not.toContain('request 3');
  },
);

it('closes the body of the page asked for ahead when the run is aborted midway', async () => {
  const { client: c, seen } = recording();
  const controller = new AbortController();
  // The page whose body had arrived, unread, when the run was aborted during the page before it.
  let ahead = 0;
  const err = await withReportJob(client, BIG, async (f) => {
    const source = reportRows(c, f.jobId, () => makePageDecoder('json'), silentLogger, controller.signal);
    await source.open(() => ({ inspect: false }));
    try {
      for await (const _ of source.rows()) {
        if (controller.signal.aborted) continue;
        // In the middle of page 1 (its first chunk): page 2 was asked for ahead; once its body is there, abort.
        await expect.poll(() => seen.bodies.has(2)).toBe(true);
        expect(seen.events).not.toContain('end 1');
        ahead = 2;
        controller.abort(new Error('stop'));
      }
      return undefined;
    } catch (e) {
      return e as Error;
    } finally {
      await source.close();
    }
  });
  expect(err).toBeInstanceOf(Error);
  expect(ahead).toBe(2);
  await expect.poll(() => seen.events).toContain(`closed ${ahead}`);
  expect(seen.events).not.toContain(`request ${ahead + 1}`);
});
