/**
 * Under injected faults (connection resets midway through pages, 502/503/504 answers) every page's bytes
 * equal those fetched without faults, and every job created is deleted.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/simulator/index.ts';
import { makeReportClient, withReportJob, type ReportClient } from '../src/report-api/index.ts';
import { REDIS_URL, uniqueName } from './support/env.ts';
import { readAll, sha256, testConnection } from './fixtures/report-api-helpers.ts';

const prefix = `${uniqueName('rapi_faults')}:`;
let redis: Redis;
let sim: Simulator;
let client: ReportClient;

/** Runs Sales/Orders (2,500 rows, 250 per page) and returns the sha256 of each page plus the resumes needed. */
async function pageHashes(
  outputType: 'json' | 'txt' | 'xml_query',
): Promise<{ hashes: string[]; resumes: number; rows: number }> {
  const req = { mandant: '7777', name: 'Sales/Orders', outputType, paging: 250, parameters: {} };
  // Starting a report is not retried after a 5xx (the server may have created the job): like a queued run's next
  // attempt, start again. The simulator answers its injected 5xx before creating anything.
  for (let attempt = 1; ; attempt++) {
    try {
      return await readPages(req);
    } catch (err) {
      if (attempt >= 10 || (err as { code?: string; stage?: string }).stage !== 'start') throw err;
    }
  }
}

async function readPages(
  req: Parameters<ReportClient['startReport']>[0],
): Promise<{ hashes: string[]; resumes: number; rows: number }> {
  return withReportJob(client, req, async (f) => {
    const hashes: string[] = [];
    let resumes = 0;
    for (let page = 1; ; page++) {
      const p = await client.openPage(f.jobId, page);
      if (p === null) break;
      hashes.push(sha256(await readAll(p.body)));
      resumes += p.resumes();
    }
    expect(hashes.length).toBe(f.pages);
    return { hashes, resumes, rows: f.rows };
  });
}

beforeAll(async () => {
  redis = new Redis(REDIS_URL);
  sim = await startSimulator({ port: 0, jobDurationMs: 30, faultSeed: 7 });
  client = await makeReportClient({
    connection: testConnection(sim.url),
    connectionName: 'faults',
    redis,
    keyPrefix: prefix,
    // generous attempts: at resetRate 0.5 a page needs 5 resumes in a row about once in 30 pages
    retry: { attempts: 12, baseDelayMs: 2, maxDelayMs: 20 },
  });
});
afterAll(async () => {
  await client.close();
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  await sim.close();
});

describe('faults', () => {
  it.each(['json', 'txt', 'xml_query'] as const)(
    '%s pages are byte-identical with resets and gateway errors',
    async (outputType) => {
      sim.setFaults({});
      const clean = await pageHashes(outputType);
      expect(clean.resumes).toBe(0);
      expect(clean.hashes).toHaveLength(10);
      expect(new Set(clean.hashes).size).toBe(10);

      sim.resetCounters();
      sim.setFaults({ resetRate: 0.5, errorRate: 0.2 });
      const faulty = await pageHashes(outputType);
      sim.setFaults({});
      const c = sim.counters();
      expect(c.faultsInjected.resets).toBeGreaterThan(0);
      expect(c.faultsInjected.errors).toBeGreaterThan(0);
      expect(faulty.resumes).toBe(c.faultsInjected.resets);
      expect(faulty.rows).toBe(2500);
      expect(faulty.hashes).toEqual(clean.hashes);
      expect(c.jobsDeleted).toBe(c.jobsCreated);
      expect(c.openJobs).toEqual([]);
    },
  );
});
