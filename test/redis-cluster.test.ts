/**
 * report-etl on a Redis Cluster (docs/operations.md "Redis Cluster"): a real three-node cluster started with
 * redis-server, and on it a worker that takes queued runs (BullMQ under a hash-tagged prefix), the shared access token,
 * the overlap lock and the report slots (Lua scripts over three keys, one hash slot), with two runs of a connection
 * limited to one report job never overlapping on the server. A prefix without a hash tag is refused.
 */
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makeRedis } from '../src/app/connections.ts';
import { silentLogger } from '../src/logger.ts';
import { enqueueManual } from '../src/queue/manual-run.ts';
import { makeQueue } from '../src/queue/queue.ts';
import { prefixForRedis } from '../src/redis-url.ts';
import { tokenCacheKey } from '../src/report-api/token-cache.ts';
import { runCli } from './support/cli-process.ts';
import { uniqueName } from './support/env.ts';
import { jobEntry, startHarness, type Harness } from './support/harness.ts';
import { deleteRuns, runsOf, waitFor, workerOf } from './support/queue-env.ts';
import { startTestCluster, type TestCluster } from './support/redis-cluster.ts';

let cluster: TestCluster;
let redis: Redis;
let h: Harness;
const jp = uniqueName('rc');

beforeAll(async () => {
  cluster = await startTestCluster();
  redis = makeRedis(silentLogger, cluster.url);
  // Report jobs stay Running 300 ms, so that two runs at once would overlap on the server.
  h = await startHarness({ jobDurationMs: 300 });
}, 90_000);
afterAll(async () => {
  redis?.disconnect();
  if (h) await deleteRuns(h.pool, jp);
  await h?.close();
  await cluster?.stop();
});

it('runs queued jobs on a Redis Cluster: queue, token, overlap lock and report slots', async () => {
  const prefix = prefixForRedis(uniqueName('rcq'), cluster.url, false);
  expect(prefix).toMatch(/^\{rcq_[0-9a-f]{8}\}$/);
  const jobs = [`${jp}_a`, `${jp}_b`];
  const config = h.config(
    Object.fromEntries(
      jobs.map((j) => [
        j,
        jobEntry(
          { name: 'Stock/Levels', outputType: 'txt', parameters: { ROWS: '20' } },
          { table: `${h.schema}.${j}`, mode: 'replace' },
        ),
      ]),
    ),
    { maxConcurrentReports: 1 },
  );
  const queue = makeQueue(redis, prefix);
  const worker = workerOf({ pool: h.pool, redis }, config, { prefix, concurrency: 2 });
  let most = 0;
  const sampler = setInterval(() => (most = Math.max(most, h.sim.counters().openJobs.length)), 5);
  try {
    await worker.worker.waitUntilReady();
    for (const j of jobs) await enqueueManual(queue, config, j);
    await waitFor(
      'both runs to succeed',
      async () =>
        (await Promise.all(jobs.map((j) => runsOf(h.pool, j)))).every((r) => r.some((x) => x.status === 'succeeded')),
      60_000,
    );
  } finally {
    clearInterval(sampler);
    await worker.close(0);
    await queue.close();
  }
  expect(most).toBe(1);
  const c = config.connections.sim!;
  // The access token the runs shared sits in the cluster, under the installation's prefix like every key of it.
  expect(await redis.get(tokenCacheKey(`${prefix}:`, c.baseUrl, c.clientId, c.clientSecret!))).toContain('accessToken');
  expect(await redis.get(tokenCacheKey('report-etl:', c.baseUrl, c.clientId, c.clientSecret!))).toBeNull();
  for (const j of jobs) {
    const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM ${h.schema}.${j}`);
    expect(rows[0].n).toBe(20);
  }
}, 120_000);

it('refuses a queue prefix without a hash tag on a cluster, with how to write it', async () => {
  expect(() => prefixForRedis('plain', cluster.url, true)).toThrow('write it as "{plain}"');
  const r = await runCli(['enqueue', 'any_job', '--queue-prefix', 'plain'], { REDIS_URL: cluster.url });
  expect(r.code).toBe(2);
  expect(r.stderr).toContain('has no hash tag, which a Redis Cluster needs');
});
