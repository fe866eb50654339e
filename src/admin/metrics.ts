/**
 * The Prometheus metrics of `/metrics` (docs/architecture.md "Observability"), on a registry of their own. Every value
 * is read at scrape time from shared state (the run history, Redis, the queue), so any admin process reports the same
 * figures for every worker and a restart loses nothing. The attempt counters count finished attempts (a run that
 * failed twice, then succeeded, adds 2 failed and 1 succeeded) and only grow: what retention pruned is added in from
 * etl.pruned_attempts. The per-job and per-connection metrics need the live jobs.yaml.
 */
import { tokenRequestsKey } from '../report-api/token-cache.ts';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { Counter, Gauge, Registry } from 'prom-client';
import { attemptAggregates, DURATION_BUCKETS_SECONDS } from '../history/attempt-aggregates.ts';
import type { Queryable } from '../db.ts';
import { listConnectionLogins, loginRowOf } from '../history/logins.ts';
import type { LiveConfig } from '../config/live-config.ts';
import { freshnessOf, staleness } from '../alerts/freshness.ts';
import { firstSeen } from '../history/job-alerts.ts';
import { jobHealth } from '../history/job-health.ts';
import type { ReportSlots } from '../report-api/report-slots.ts';
import { jobOfSubject, parseSubject, runSubjects } from '../config/mandants.ts';

/** For tests and tools that read or reset the token counter, and the histogram's bounds in seconds. */
export { tokenRequestsKey, DURATION_BUCKETS_SECONDS };

/** The HELP of each metric. */
const HELP: Record<string, string> = {
  report_etl_attempts_total: 'Finished attempts by job and status (succeeded, failed, interrupted), from etl.attempts.',
  report_etl_rows_loaded_total: 'Rows loaded by succeeded attempts, by job, from etl.attempts.',
  report_etl_bytes_loaded_total: 'Page bytes loaded by succeeded attempts, by job, from etl.attempts.',
  report_etl_attempt_duration_seconds: 'Duration of finished attempts in seconds, by job, from etl.attempts.',
  report_etl_token_requests_total: 'Requests to the token endpoint by all report-etl processes (Redis counter).',
  report_etl_queue_jobs: 'Jobs in the BullMQ queue by state, read at scrape time.',
  report_etl_workers_alive:
    'Worker processes (worker, start) connected to the queue and taking runs now, from the Redis client list.',
  report_etl_login_required:
    'User-dependent connections: 1 while runs fail with LOGIN_REQUIRED until `report-etl login <connection>`, ' +
    '0 while logged in.',
  report_etl_job_last_success_timestamp_seconds:
    'Unix time of the end of the newest succeeded run of each jobs.yaml job (absent when it never succeeded).',
  report_etl_job_stale:
    'Whether the last success of a job is older than its freshness (1) or not (0); jobs with a freshness only.',
  report_etl_job_freshness_seconds:
    "The freshness of each job that has one (jobs.yaml freshness, or its connection's), in seconds: " +
    'the longest time since its last success.',
  report_etl_job_failing:
    'Whether a run of the job failed for good (after its last retry) and no run of it succeeded since (1) ' +
    "or not (0); connection: the job's jobs.yaml connection.",
  report_etl_job_config_invalid:
    'Jobs of jobs.yaml that are invalid and do not run (1 each; see the admin overview or report-etl validate).',
  report_etl_report_slots_in_use:
    'Report jobs of each connection open on its server now (or about to be), across every worker.',
  report_etl_report_slots_limit:
    'maxConcurrentReports of each connection: the most report jobs it may have open on its server at once.',
  report_etl_runs_waiting_for_slot:
    'Runs of each connection waiting for a report slot (they hold no attempt and no PostgreSQL connection).',
};

/** BullMQ job states reported by `report_etl_queue_jobs{state}`. */
const QUEUE_STATES = [
  'waiting',
  'active',
  'delayed',
  'prioritized',
  'waiting-children',
  'completed',
  'failed',
] as const;

/** What the metrics read from. */
interface MetricsSources {
  pool: Queryable;
  redis: Pick<Redis, 'get'>;
  queue: Pick<Queue, 'getJobCounts' | 'getWorkers'>;
  /** Redis key prefix of the token counter (default 'report-etl:'). */
  keyPrefix?: string | undefined;
  /** The live jobs.yaml, for the per-job and per-connection metrics (left out without it). */
  config?: LiveConfig | undefined;
  /** The fleet's report slots, for the per-connection slot gauges (left out without them or `config`). */
  slots?: Pick<ReportSlots, 'usage'> | undefined;
}

/** The admin server's metrics. */
interface AdminMetrics {
  registry: Registry;
  /** The exposition text (Prometheus text format 0.0.4); reads PostgreSQL, Redis and the queue. */
  render(): Promise<string>;
  contentType: string;
}

type Sample = { labels: Record<string, string | number>; value: number; metricName?: string };
/** Label values and value of one series of a Counter or Gauge. */
type Series = [Record<string, string>, number];

/** `read`, shared by the calls made while one is under way: one read per scrape, however many metrics use it. */
function shared<T>(read: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => (pending ??= read().finally(() => (pending = undefined)));
}

/**
 * Registers on `registry` a metric whose samples `read` gives as they are: prom-client's Histogram counts
 * observations one at a time (these buckets come from SQL), and its Gauge always has an unlabelled value (0), where
 * there may be none to tell.
 */
function registerRead(registry: Registry, name: string, type: 'gauge' | 'histogram', read: () => Promise<Sample[]>) {
  const get = async () => ({
    name,
    help: HELP[name]!,
    type,
    aggregator: 'sum',
    values: (await read()).map((s) => ({ ...s, labels: withMandantLabel(s.labels) })),
  });
  registry.registerMetric({ name, help: HELP[name]!, type, aggregator: 'sum', get } as unknown as Gauge);
}

/**
 * The labels of a series of a run subject (config/mandants.ts): `job="sales_orders[8888]"` becomes
 * `job="sales_orders", mandant="8888"` (docs/observability.md "Metrics"); a job with one mandant has no mandant label.
 */
function withMandantLabel<L extends Record<string, string | number>>(labels: L): L {
  if (typeof labels.job !== 'string') return labels;
  const { job, mandant } = parseSubject(labels.job);
  return mandant === undefined ? labels : { ...labels, job, mandant: String(mandant) };
}

/** Registers on `registry` a Counter or Gauge whose series `read` gives at each scrape. */
function collected(
  registry: Registry,
  kind: 'counter' | 'gauge',
  name: string,
  labelNames: string[],
  read: () => Promise<Series[]> | Series[],
): void {
  const names = labelNames.includes('job') ? [...labelNames, 'mandant'] : labelNames;
  const config = { name, help: HELP[name]!, labelNames: names, registers: [registry] };
  if (kind === 'counter') {
    new Counter({
      ...config,
      async collect() {
        const series = await read();
        this.reset();
        for (const [labels, value] of series) this.inc(withMandantLabel(labels), value);
      },
    });
  } else {
    new Gauge({
      ...config,
      async collect() {
        const series = await read();
        this.reset();
        for (const [labels, value] of series) this.set(withMandantLabel(labels), value);
      },
    });
  }
}

/**
 * Builds the metrics on a fresh registry (several servers in one process do not clash).
 * Errors of a source (PostgreSQL or Redis down) reject `render()`; the route answers 500 then.
 */
export function makeAdminMetrics(src: MetricsSources): AdminMetrics {
  const registry = new Registry();
  const attempts = shared(() => attemptAggregates(src.pool, DURATION_BUCKETS_SECONDS));
  const succeeded = async (value: 'rows' | 'bytes') =>
    (await attempts()).totals.flatMap((t): Series[] => (t.status === 'succeeded' ? [[{ job: t.job }, t[value]]] : []));

  collected(registry, 'counter', 'report_etl_attempts_total', ['job', 'status'], async () =>
    (await attempts()).totals.map((t) => [{ job: t.job, status: t.status }, t.attempts]),
  );
  collected(registry, 'counter', 'report_etl_rows_loaded_total', ['job'], () => succeeded('rows'));
  collected(registry, 'counter', 'report_etl_bytes_loaded_total', ['job'], () => succeeded('bytes'));
  const d = 'report_etl_attempt_duration_seconds';
  registerRead(registry, d, 'histogram', async () =>
    (await attempts()).durations.flatMap(({ job, buckets, count, sumSeconds }): Sample[] => [
      ...DURATION_BUCKETS_SECONDS.map((le, i) => ({
        labels: { le, job },
        value: buckets[i]!,
        metricName: `${d}_bucket`,
      })),
      { labels: { le: '+Inf', job }, value: count, metricName: `${d}_bucket` },
      { labels: { job }, value: sumSeconds, metricName: `${d}_sum` },
      { labels: { job }, value: count, metricName: `${d}_count` },
    ]),
  );
  collected(registry, 'counter', 'report_etl_token_requests_total', [], async () => {
    const raw = await src.redis.get(tokenRequestsKey(src.keyPrefix));
    return [[{}, raw === null ? 0 : Number(raw)]];
  });
  collected(registry, 'gauge', 'report_etl_queue_jobs', ['state'], async () => {
    const counts = await src.queue.getJobCounts(...QUEUE_STATES);
    return QUEUE_STATES.map((state) => [{ state }, counts[state] ?? 0]);
  });
  registerRead(registry, 'report_etl_workers_alive', 'gauge', async () => {
    // A Redis that refuses CLIENT LIST (an ACL: an error; a managed Redis without it: BullMQ's one made-up entry
    // with no client id) cannot tell the count: the gauge is left out, the other metrics stay.
    const workers = await src.queue.getWorkers().catch(() => undefined);
    return !workers || workers.some((w) => w.id === undefined) ? [] : [{ labels: {}, value: workers.length }];
  });
  collected(registry, 'gauge', 'report_etl_login_required', ['connection'], async () => {
    const rows = await listConnectionLogins(src.pool);
    const waiting = (r: (typeof rows)[number]) => (r.login_required_at !== null || !r.logged_in ? 1 : 0);
    const configured = src.config?.current().connections;
    if (!configured) {
      return rows.flatMap((r): Series[] =>
        r.auth === 'authorization_code' ? [[{ connection: r.connection }, waiting(r)]] : [],
      );
    }
    // The live jobs.yaml's connections, each by its current server and client: one never logged in waits too.
    return Object.entries(configured).flatMap(([name, c]): Series[] => {
      if (c.auth !== 'authorization_code') return [];
      const r = loginRowOf(rows, name, c);
      return [[{ connection: name }, r ? waiting(r) : 1]];
    });
  });
  if (src.config) addJobMetrics(registry, src.pool, src.config);
  if (src.config && src.slots) addSlotMetrics(registry, src.slots, src.config);
  return { registry, render: () => registry.metrics(), contentType: registry.contentType };
}

/** The per-job gauges, from the live config, etl.attempts and etl.job_alerts. */
function addJobMetrics(registry: Registry, pool: Queryable, config: LiveConfig): void {
  const jobs = shared(async () => {
    const cfg = config.current();
    const names = runSubjects(cfg).map((s) => s.name);
    const [health, seen] = await Promise.all([jobHealth(pool, names, 0), firstSeen(pool, names, false)]);
    const now = new Date();
    return health.map((h) => {
      const at = h.lastSuccess ? (h.lastSuccess.finished_at ?? h.lastSuccess.started_at) : undefined;
      const f = freshnessOf(cfg, h.job);
      const stale = f ? staleness(at, seen.get(h.job), f.ms, now).stale : undefined;
      const connection = jobOfSubject(cfg, h.job)?.connection ?? '';
      return { job: h.job, at, freshnessMs: f?.ms, stale, failing: h.failingSince !== undefined, connection };
    });
  });
  type Job = Awaited<ReturnType<typeof jobs>>[number];
  const gauge = (name: string, series: (j: Job) => Series[], labels = ['job']) =>
    collected(registry, 'gauge', name, labels, async () => (await jobs()).flatMap(series));
  gauge('report_etl_job_last_success_timestamp_seconds', (j) =>
    j.at ? [[{ job: j.job }, j.at.getTime() / 1000]] : [],
  );
  gauge('report_etl_job_stale', (j) => (j.stale === undefined ? [] : [[{ job: j.job }, j.stale ? 1 : 0]]));
  gauge('report_etl_job_freshness_seconds', (j) =>
    j.freshnessMs === undefined ? [] : [[{ job: j.job }, j.freshnessMs / 1000]],
  );
  gauge('report_etl_job_failing', (j) => [[{ job: j.job, connection: j.connection }, j.failing ? 1 : 0]], [
    'job',
    'connection',
  ]);
  collected(registry, 'gauge', 'report_etl_job_config_invalid', ['job'], () =>
    config.invalid().flatMap((e): Series[] => (e.kind === 'job' ? [[{ job: e.name }, 1]] : [])),
  );
}

/** The per-connection report slot gauges (docs/architecture.md "A fleet"), from Redis. */
function addSlotMetrics(registry: Registry, slots: Pick<ReportSlots, 'usage'>, config: LiveConfig): void {
  const usage = shared(() =>
    Promise.all(
      Object.entries(config.current().connections).map(async ([connection, c]) => ({
        connection,
        limit: c.maxConcurrentReports,
        ...(await slots.usage(connection)),
      })),
    ),
  );
  const gauge = (name: string, value: (u: Awaited<ReturnType<typeof usage>>[number]) => number) =>
    collected(registry, 'gauge', name, ['connection'], async () =>
      (await usage()).map((u) => [{ connection: u.connection }, value(u)]),
    );
  gauge('report_etl_report_slots_in_use', (u) => u.held);
  gauge('report_etl_report_slots_limit', (u) => u.limit);
  gauge('report_etl_runs_waiting_for_slot', (u) => u.waiting);
}
