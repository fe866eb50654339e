/**
 * Start / poll / pages / delete against the simulator over real HTTP with the real Redis: counts,
 * server error texts verbatim, rights failure, 403, poll timeout and growth, abort mid-poll.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FAILING_MESSAGE, RIGHTS_MESSAGE, startSimulator, type Simulator } from '../src/simulator/index.ts';
import { makeReportClient, withReportJob, type ReportClient } from '../src/report-api/index.ts';
import { REDIS_URL, uniqueName } from './support/env.ts';
import { readAll, testConnection } from './fixtures/report-api-helpers.ts';
import { waitFor } from './support/wait.ts';

const prefix = `${uniqueName('rapi_jobs')}:`;
let redis: Redis;
let sim: Simulator;
const clients: ReportClient[] = [];

async function newClient(
  overrides: Parameters<typeof testConnection>[1] = {},
  s: Simulator = sim,
): Promise<ReportClient> {
  const c = await makeReportClient({
    connection: testConnection(s.url, overrides),
    connectionName: 'sim',
    redis,
    keyPrefix: prefix,
    retry: { baseDelayMs: 5, maxDelayMs: 50 },
  });
  clients.push(c);
  return c;
}

const sales = (rows: number, outputType: 'json' | 'txt' | 'xml_query' | 'json_compact' = 'json') => ({
  mandant: '7777',
  name: 'Sales/Orders',
  outputType,
  paging: 100,
  parameters: { ROWS: String(rows) },
});

beforeAll(async () => {
  redis = new Redis(REDIS_URL);
  sim = await startSimulator({ port: 0, jobDurationMs: 60 });
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
});
afterAll(async () => {
  await redis.quit();
  await sim.close();
});

describe('a report run', () => {
  it('starts, polls, reads pages 1.. until 404 and deletes; rows and pages match the message', async () => {
    const client = await newClient();
    sim.resetCounters();
    const job = await client.startReport(sales(250));
    expect(job.state).toBe('Running');
    expect(job.message).toBe('');
    const finished = await client.waitForJob(job.id);
    expect(finished).toMatchObject({
      jobId: job.id,
      rows: 250,
      pages: 3,
      job: { state: 'FinishedSuccess', message: 'rows=250;pages=3' },
    });
    expect(finished.job.finishedAt).toEqual(expect.any(String));
    const rowsPerPage: number[] = [];
    for (let page = 1; ; page++) {
      const p = await client.openPage(job.id, page);
      if (p === null) break;
      expect(p.contentType).toMatch(/^application\/json/);
      const data = (JSON.parse((await readAll(p.body)).toString('utf8')) as { data: unknown[] }).data;
      rowsPerPage.push(data.length);
      expect(p.resumes()).toBe(0);
    }
    expect(rowsPerPage).toEqual([100, 100, 50]);
    await client.deleteJob(job.id);
    await client.deleteJob(job.id); // 404 now: fine
    // an unknown job's 404 carries a problem body: not to be taken for "no more pages"
    await expect(client.openPage(job.id, 1)).rejects.toMatchObject({
      code: 'HTTP_UNEXPECTED',
      httpStatus: 404,
      stage: 'fetch',
    });
    const c = sim.counters();
    expect(c.requests.output).toBe(5);
    expect(c.jobsDeleted).toBe(1);
    expect(c.openJobs).not.toContain(job.id);
  });

  it('gives txt pages with Content-Length equal to the bytes read, and works with backslash sub folders', async () => {
    const client = await newClient({ pathEncoding: 'backslash' });
    const lengths = await withReportJob(
      client,
      { ...sales(30, 'txt'), name: 'Sub/Deep/Nested Report', paging: 10 },
      async (f) => {
        const out: Array<[number | undefined, number]> = [];
        for (let page = 1; page <= f.pages + 1; page++) {
          const p = await client.openPage(f.jobId, page);
          if (p === null) break;
          expect(p.contentType).toMatch(/^text\/plain/);
          out.push([p.contentLength, (await readAll(p.body)).length]);
        }
        return out;
      },
    );
    expect(lengths.length).toBeGreaterThan(0);
    for (const [declared, read] of lengths) expect(read).toBe(declared);
    expect(sim.counters().openJobs).toEqual([]);
  });

  it('FinishedError -> REPORT_FAILED with the multi-line server text verbatim', async () => {
    const client = await newClient();
    const err = await withReportJob(client, { ...sales(10), name: 'Failing' }, async () => 'unreachable').catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({
      code: 'REPORT_FAILED',
      retryable: false,
      stage: 'poll',
      serverMessage: FAILING_MESSAGE,
    });
    expect(FAILING_MESSAGE).toContain('\n');
    expect(sim.counters().openJobs).toEqual([]);
  });

  it('rights failure at start -> RIGHTS_FAILURE with the text and job id, and the job is deleted', async () => {
    const client = await newClient({ clientId: 'no-rights-client', clientSecret: 'no-rights-secret' });
    sim.resetCounters();
    const err = await client.startReport(sales(10)).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'RIGHTS_FAILURE',
      retryable: false,
      stage: 'start',
      serverMessage: RIGHTS_MESSAGE,
      jobId: expect.any(String),
    });
    const c = sim.counters();
    expect(c.jobsCreated).toBe(1);
    expect(c.jobsDeleted).toBe(1);
    expect(c.openJobs).toEqual([]);
  });

  it(
    'an unknown report (FinishedError at start without result) ' + '-> REPORT_FAILED at stage start, job deleted',
    async () => {
      const client = await newClient();
      const err = await client.startReport({ ...sales(10), name: 'No/Such Report' }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'REPORT_FAILED', stage: 'start' });
      expect((err as { serverMessage: string }).serverMessage).toContain('No/Such Report.avw');
      expect(sim.counters().openJobs).toEqual([]);
    },
  );

  it('a wrong client secret -> TOKEN_FAILED with status and OAuth error, without the secret, and no job', async () => {
    const client = await newClient({ clientSecret: 'wrong-secret-123' });
    sim.resetCounters();
    const err = await client.startReport(sales(10)).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'TOKEN_FAILED',
      stage: 'token',
      httpStatus: 401,
      oauthError: 'invalid_client',
      retryable: false,
    });
    expect((err as Error).message).not.toContain('wrong-secret-123');
    expect(sim.counters().requests.start ?? 0).toBe(0);
  });

  it('403 -> ACCESS_FORBIDDEN with SvcServletExceptionMessage and the problem body', async () => {
    const client = await newClient({ clientId: 'no-access-client', clientSecret: 'no-access-secret' });
    const err = await client.startReport(sales(10)).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'ACCESS_FORBIDDEN',
      httpStatus: 403,
      retryable: false,
      serverMessage: expect.stringContaining('no-access-client'),
      problem: {
        status: 403,
        instance: 'no-access-client',
        type: expect.stringContaining('/erp/authorization/user-service-access-forbidden'),
      },
    });
  });
});

describe('polling', () => {
  it('grows the interval and fails with POLL_TIMEOUT after pollTimeoutMs; the job is still deleted', async () => {
    const slow = await startSimulator({ port: 0, jobDurationMs: 60_000 });
    try {
      const client = await newClient({ pollIntervalMs: 20, pollMaxIntervalMs: 100, pollTimeoutMs: 700 }, slow);
      const t0 = Date.now();
      const err = await withReportJob(client, sales(10), async () => 'unreachable').catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'POLL_TIMEOUT', stage: 'poll', retryable: true });
      expect(Date.now() - t0).toBeGreaterThanOrEqual(700);
      const c = slow.counters();
      // 20, 30, 45, 68, 100, 100, ... ms: about 10 polls; a fixed 20 ms interval would be about 35.
      expect(c.requests.status).toBeGreaterThanOrEqual(7);
      expect(c.requests.status).toBeLessThanOrEqual(13);
      expect(c.openJobs).toEqual([]);
      expect(c.jobsDeleted).toBe(1);
    } finally {
      await slow.close();
    }
  });

  it("counts the first poll from the server's answer to the start (startedAt), not from the call", async () => {
    const client = await newClient({ pollIntervalMs: 600_000, pollMaxIntervalMs: 600_000 });
    const job = await client.startReport(sales(10));
    // Told the job started 599.5 s ago, the client polls within about half a second, not in ten minutes (the test
    // times out long before); the simulator's job (60 ms) has finished by then.
    const finished = await client.waitForJob(job.id, undefined, Date.now() - 599_500);
    expect(finished).toMatchObject({ jobId: job.id, rows: 10, pages: 1 });
    await client.deleteJob(job.id);
  });

  it('an abort mid-poll ends the run with ABORTED and the job is still deleted', async () => {
    const slow = await startSimulator({ port: 0, jobDurationMs: 60_000 });
    try {
      const client = await newClient({ pollIntervalMs: 20, pollMaxIntervalMs: 50 }, slow);
      const ac = new AbortController();
      const ended = withReportJob(client, sales(10), async () => 'unreachable', { signal: ac.signal }).catch(
        (e: unknown) => e,
      );
      await waitFor('two polls', () => slow.counters().requests.status >= 2);
      ac.abort(new Error('shutdown'));
      const err = await ended;
      expect(err).toMatchObject({ code: 'ABORTED' });
      expect((err as Error).message).toContain('shutdown');
      const c = slow.counters();
      expect(c.requests.status).toBeGreaterThanOrEqual(2);
      expect(c.jobsCreated).toBe(1);
      expect(c.jobsDeleted).toBe(1);
      expect(c.openJobs).toEqual([]);
    } finally {
      await slow.close();
    }
  });

  it('an abort while reading pages also deletes the job', async () => {
    const client = await newClient();
    const ac = new AbortController();
    sim.resetCounters();
    const err = await withReportJob(
      client,
      sales(300),
      async (f) => {
        const p = (await client.openPage(f.jobId, 1, ac.signal))!;
        ac.abort('stop');
        return readAll(p.body);
      },
      { signal: ac.signal },
    ).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ABORTED' });
    expect(sim.counters().jobsDeleted).toBe(1);
    expect(sim.counters().openJobs).toEqual([]);
  });
});
