/**
 * The gauges of /metrics that dashboards and alerting rules need, scraped over HTTP from an admin server on the real
 * PostgreSQL and Redis: workers alive, a job's freshness, a job failing for good.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRunAlerts } from '../src/alerts/run-alerts.ts';
import { noAlerts } from '../src/alerts/webhook-sender.ts';
import { staticConfig } from '../src/config/live-config.ts';
import { configSchema, type EtlConfig } from '../src/config/schema.ts';
import { startAdminServer, type AdminServer } from '../src/admin/server.ts';
import { makeRedis } from '../src/app/connections.ts';
import { silentLogger } from '../src/logger.ts';
import { enqueueManual } from '../src/queue/manual-run.ts';
import { makeQueue, type RunQueue } from '../src/queue/queue.ts';
import type { RunWorker } from '../src/queue/worker.ts';
import { REDIS_URL, uniqueName } from './support/env.ts';
import { startHarness, type Harness } from './support/harness.ts';
import { deleteKeys, deleteRuns, waitFor, workerOf } from './support/queue-env.ts';
import { adminServerOf } from './support/admin-login.ts';

const token = uniqueName('tok');
const jp = uniqueName('dash');
const okJob = `${jp}_ok`;
const failJob = `${jp}_fail`;
const plainJob = `${jp}_plain`;

let h: Harness;
let prefix: string;
let queue: RunQueue;
let config: EtlConfig;
let server: AdminServer;
let worker: RunWorker | undefined;

beforeAll(async () => {
  h = await startHarness();
  prefix = uniqueName('dashq');
  queue = makeQueue(h.redis, prefix);
  const sim = {
    baseUrl: h.sim.url,
    clientId: 'demo-client',
    clientSecret: 'demo-secret',
    pollIntervalMs: 20,
    pollMaxIntervalMs: 100,
  };
  config = configSchema.parse({
    connections: {
      sim,
      // A user-dependent connection nobody logged in to: report_etl_login_required has a series.
      user: {
        baseUrl: h.sim.url,
        auth: 'authorization_code',
        clientId: uniqueName('never'),
        scopes: ['svc.pad'],
        redirectUri: 'https://etl.example.com/oauth/callback',
      },
    },
    jobs: {
      [okJob]: {
        connection: 'sim',
        freshness: '26h',
        report: { mandant: 7777, name: 'Sales/Orders', outputType: 'json', parameters: { ROWS: '10' } },
        target: { table: `${h.schema}.orders` },
      },
      [failJob]: {
        connection: 'sim',
        freshness: '1h',
        retry: { attempts: 1 },
        report: { mandant: 7777, name: 'Failing' },
        target: { table: `${h.schema}.failing` },
      },
      [plainJob]: {
        connection: 'sim',
        report: { mandant: 7777, name: 'Sales/Orders', outputType: 'json', parameters: { ROWS: '5' } },
        target: { table: `${h.schema}.plain` },
      },
    },
  });
  // One success, so that the last-success timestamp, the row counters and the duration histogram have samples.
  await h.run(config, okJob);
  server = await adminServerOf(h, queue, { auth: { token }, liveConfig: staticConfig(config) });
}, 60_000);

afterAll(async () => {
  await worker?.close(0);
  await server?.close();
  await queue?.obliterate({ force: true }).catch(() => undefined);
  await queue?.close();
  if (h) {
    await deleteKeys(h.redis, prefix);
    await deleteRuns(h.pool, jp);
    await h.pool.query('DELETE FROM etl.job_alerts WHERE job LIKE $1', [`${jp}%`]);
    await h.close();
  }
});

async function scrape(): Promise<string> {
  const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return res.text();
}

/** The value of one sample line `name{labels} value` of an exposition text, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** report_etl_job_failing of a job of connection `sim`: the connection is a label, for the rules' login exception. */
const failingOf = (text: string, job: string): number | undefined =>
  sample(text, `report_etl_job_failing{job="${job}",connection="sim"}`);

describe('the gauges the dashboard and the rules need', () => {
  it(
    'report_etl_workers_alive counts the worker processes on the queue (0, 1 while one runs, 0 after it closed); ' +
      'report_etl_job_failing turns 1 when a run fails for good',
    async () => {
      expect(await scrape()).toContain('# TYPE report_etl_workers_alive gauge');
      expect(sample(await scrape(), 'report_etl_workers_alive')).toBe(0);
      worker = workerOf(h, config, { prefix, alerts: makeRunAlerts(h.pool, noAlerts, silentLogger) });
      await waitFor('the worker counted', async () => sample(await scrape(), 'report_etl_workers_alive') === 1);

      // A run that fails for good (one attempt) turns report_etl_job_failing on; the others stay 0.
      const before = await scrape();
      expect(failingOf(before, failJob)).toBe(0);
      await enqueueManual(queue, config, failJob);
      const after = await waitFor(
        'the failing gauge',
        async () => {
          const text = await scrape();
          return failingOf(text, failJob) === 1 && text;
        },
        60_000,
      );
      expect(failingOf(after, okJob)).toBe(0);
      expect(failingOf(after, plainJob)).toBe(0);
      expect(sample(after, `report_etl_attempts_total{job="${failJob}",status="failed"}`)).toBe(1);

      await worker.close(0);
      worker = undefined;
      await waitFor('no worker counted', async () => sample(await scrape(), 'report_etl_workers_alive') === 0);
    },
  );

  it(
    'report_etl_job_freshness_seconds gives the freshness of each job that has one, ' +
      'beside its last success and stale state',
    async () => {
      const text = await scrape();
      expect(sample(text, `report_etl_job_freshness_seconds{job="${okJob}"}`)).toBe(26 * 3600);
      expect(sample(text, `report_etl_job_freshness_seconds{job="${failJob}"}`)).toBe(3600);
      expect(text).not.toContain(`report_etl_job_freshness_seconds{job="${plainJob}"}`);
      const lastSuccess = sample(text, `report_etl_job_last_success_timestamp_seconds{job="${okJob}"}`)!;
      expect(Date.now() / 1000 - lastSuccess).toBeGreaterThanOrEqual(0);
      expect(Date.now() / 1000 - lastSuccess).toBeLessThan(26 * 3600);
      expect(sample(text, `report_etl_job_stale{job="${okJob}"}`)).toBe(0);
    },
  );

  it(
    'a Redis user that may not run CLIENT LIST leaves report_etl_workers_alive out, ' + 'and /metrics still answers',
    async () => {
      const user = uniqueName('noclient');
      const password = uniqueName('pw');
      await h.redis.call('ACL', 'SETUSER', user, 'on', `>${password}`, '~*', '&*', '+@all', '-client');
      const url = new URL(REDIS_URL);
      url.username = user;
      url.password = password;
      const redis = makeRedis(silentLogger, url.toString());
      const limitedQueue = makeQueue(redis, prefix);
      const limited = await startAdminServer({
        pool: h.pool,
        redis,
        queue: limitedQueue,
        logger: silentLogger,
        port: 0,
        auth: { token },
        liveConfig: staticConfig(config),
      });
      try {
        expect(await redis.call('ACL', 'WHOAMI')).toBe(user);
        await expect(redis.call('CLIENT', 'LIST')).rejects.toThrow(/NOPERM/);
        const res = await fetch(`${limited.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
        expect(res.status).toBe(200);
        const text = await res.text();
        expect(text).not.toMatch(/^report_etl_workers_alive /m);
        expect(sample(text, 'report_etl_queue_jobs{state="waiting"}')).toBe(0);
        expect(sample(text, `report_etl_job_freshness_seconds{job="${okJob}"}`)).toBe(26 * 3600);
      } finally {
        await limited.close();
        await limitedQueue.close();
        redis.disconnect();
        await h.redis.call('ACL', 'DELUSER', user);
      }
    },
  );
});
