/**
 * The Prometheus metrics of `/metrics`, on a registry of their own.
 *
 * Every value is read at scrape time from shared state, so any admin process reports the same figures for all
 * workers, whichever process ran the runs, and nothing is lost on a restart:
 * - `report_etl_attempts_total{job,status}`, `report_etl_rows_loaded_total{job}`, `report_etl_bytes_loaded_total{job}`
 *   and the `report_etl_attempt_duration_seconds{job}` histogram are SQL aggregates over the finished attempts in
 *   etl.attempts (status succeeded | failed | interrupted; rows and bytes of succeeded attempts only). They count
 *   attempts, not runs: a run that failed twice and then succeeded counts 2 failed and 1 succeeded. Attempts still
 *   running are not counted yet, and what retention pruned is kept summed in etl.pruned_attempts and added in, so
 *   the counters only grow.
 * - `report_etl_token_requests_total`: the Redis counter {@link tokenRequestsKey}, incremented once per request to
 *   the token endpoint by whichever process asks (src/report-api/report-client.ts).
 * - `report_etl_queue_jobs{state}`: BullMQ `getJobCounts()` of the queue.
 * - `report_etl_workers_alive`: the worker processes taking runs from the queue now (BullMQ `getWorkers()`: the
 *   Redis connections its workers named after the queue, one per process of `worker` or `start`, whatever its
 *   concurrency; a foreground `report-etl run` is not one). Absent when Redis refuses `CLIENT LIST` (an ACL
 *   without it, some managed offers), since no count could be told then.
 * - `report_etl_login_required{connection}`: 1 while a user-dependent connection waits for `report-etl login`
 *   (never logged in, or its refresh token was refused: LOGIN_REQUIRED), 0 while it is logged in; from
 *   etl.connection_logins, for the connections of the live jobs.yaml when the server has it.
 * - per jobs.yaml job, with the live config: `report_etl_job_last_success_timestamp_seconds{job}` (unix
 *   time of the newest succeeded attempt's end; absent when it never succeeded), `report_etl_job_stale{job}` (1 when
 *   its freshness is breached, 0 otherwise; jobs with a freshness only), `report_etl_job_freshness_seconds{job}` (that
 *   freshness, so a dashboard can set the age of the last success against it), `report_etl_job_failing{job,connection}` (1
 *   from a run that failed for good, after its last retry, until the job's next success: etl.job_alerts, the state
 *   the `failed` and `recovered` alerts and the overview's *failing now* follow; 0 otherwise; `connection` lets a rule
 *   leave out the jobs of a connection that needs a login) and
 *   `report_etl_job_config_invalid{job}` (1 for each job jobs.yaml problems keep from running, so
 *   `sum(report_etl_job_config_invalid) > 0` can page).
 */
import { tokenRequestsKey } from '../report-api/token-cache.ts';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { Counter, Gauge, Registry, type Histogram } from 'prom-client';
import {
  attemptAggregates,
  DURATION_BUCKETS_SECONDS,
  type AttemptAggregates,
  type DurationHistogram,
} from '../history/attempt-aggregates.ts';
import type { Queryable } from '../db.ts';
import { listConnectionLogins } from '../history/logins.ts';
import type { LiveConfig } from '../config/live-config.ts';
import { freshnessOf, staleness } from '../alerts/freshness.ts';
import { firstSeen } from '../history/job-alerts.ts';
import { jobHealth } from '../history/job-health.ts';
import type { ReportSlots } from '../report-api/report-slots.ts';

/** Re-exported for tests and tools that read or reset the counter. */
export { tokenRequestsKey };

/** Upper bounds of the attempt duration histogram, in seconds (1 s .. 2 h); kept with the history, which sums by them. */
export { DURATION_BUCKETS_SECONDS };

/** BullMQ job states reported by `report_etl_queue_jobs{state}`. */
export const QUEUE_STATES = [
  'waiting',
  'active',
  'delayed',
  'prioritized',
  'waiting-children',
  'completed',
  'failed',
] as const;

/** What the metrics read from. */
export interface MetricsSources {
  pool: Queryable;
  redis: Pick<Redis, 'get'>;
  queue: Pick<Queue, 'getJobCounts' | 'getWorkers'>;
  /** Redis key prefix of the token counter (default 'report-etl:'). */
  keyPrefix?: string | undefined;
  /** The live jobs.yaml, for the per-job freshness and config metrics (without it they are left out). */
  config?: LiveConfig | undefined;
  /** The fleet's report slots, for the per-connection slot gauges (with `config`; without either they are left out). */
  slots?: Pick<ReportSlots, 'usage'> | undefined;
}

/** The admin server's metrics. */
export interface AdminMetrics {
  registry: Registry;
  /** The exposition text (Prometheus text format 0.0.4); reads Postgres, Redis and the queue. */
  render(): Promise<string>;
  contentType: string;
}

/**
 * A histogram whose buckets come from SQL rather than from observe() calls: prom-client's Histogram only
 * counts observations one at a time, so this yields the same exposition shape (`_bucket{le}`, `_sum`, `_count`).
 */
class DerivedHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly read: () => Promise<DurationHistogram[]>;
  constructor(name: string, help: string, read: () => Promise<DurationHistogram[]>) {
    this.name = name;
    this.help = help;
    this.read = read;
  }
  async get(): Promise<{
    name: string;
    help: string;
    type: string;
    aggregator: string;
    values: Array<{ labels: Record<string, string | number>; value: number; metricName: string }>;
  }> {
    const values: Array<{ labels: Record<string, string | number>; value: number; metricName: string }> = [];
    for (const h of await this.read()) {
      DURATION_BUCKETS_SECONDS.forEach((le, i) =>
        values.push({ labels: { le, job: h.job }, value: h.buckets[i]!, metricName: `${this.name}_bucket` }),
      );
      values.push({ labels: { le: '+Inf', job: h.job }, value: h.count, metricName: `${this.name}_bucket` });
      values.push({ labels: { job: h.job }, value: h.sumSeconds, metricName: `${this.name}_sum` });
      values.push({ labels: { job: h.job }, value: h.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

/**
 * A gauge without labels that can be absent: prom-client's Gauge always reports an unlabelled value (0 after reset()),
 * which would read as a figure where there is none to tell.
 */
class OptionalGauge {
  readonly name: string;
  readonly help: string;
  readonly type = 'gauge';
  readonly aggregator = 'sum';
  private readonly read: () => Promise<number | undefined>;
  constructor(name: string, help: string, read: () => Promise<number | undefined>) {
    this.name = name;
    this.help = help;
    this.read = read;
  }
  async get(): Promise<{
    name: string;
    help: string;
    type: string;
    aggregator: string;
    values: Array<{ labels: Record<string, string>; value: number }>;
  }> {
    const value = await this.read();
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: value === undefined ? [] : [{ labels: {}, value }],
    };
  }
}

/**
 * Builds the metrics on a fresh registry (several servers in one process do not clash).
 * Errors of a source (Postgres or Redis down) reject `render()`; the route answers 500 then.
 */
export function makeAdminMetrics(src: MetricsSources): AdminMetrics {
  const registry = new Registry();
  // One read of etl.attempts per scrape, however many metrics derive from it; concurrent scrapes share it too.
  let pending: Promise<AttemptAggregates> | undefined;
  const snapshot = (): Promise<AttemptAggregates> =>
    (pending ??= attemptAggregates(src.pool, DURATION_BUCKETS_SECONDS).finally(() => {
      pending = undefined;
    }));

  new Counter({
    name: 'report_etl_attempts_total',
    help: 'Finished attempts by job and status (succeeded, failed, interrupted), from etl.attempts.',
    labelNames: ['job', 'status'] as const,
    registers: [registry],
    async collect() {
      const { totals } = await snapshot();
      this.reset();
      for (const t of totals) this.inc({ job: t.job, status: t.status }, t.attempts);
    },
  });
  new Counter({
    name: 'report_etl_rows_loaded_total',
    help: 'Rows loaded by succeeded attempts, by job, from etl.attempts.',
    labelNames: ['job'] as const,
    registers: [registry],
    async collect() {
      const { totals } = await snapshot();
      this.reset();
      for (const t of totals) if (t.status === 'succeeded') this.inc({ job: t.job }, t.rows);
    },
  });
  new Counter({
    name: 'report_etl_bytes_loaded_total',
    help: 'Page bytes loaded by succeeded attempts, by job, from etl.attempts.',
    labelNames: ['job'] as const,
    registers: [registry],
    async collect() {
      const { totals } = await snapshot();
      this.reset();
      for (const t of totals) if (t.status === 'succeeded') this.inc({ job: t.job }, t.bytes);
    },
  });
  const histogram = new DerivedHistogram(
    'report_etl_attempt_duration_seconds',
    'Duration of finished attempts in seconds, by job, from etl.attempts.',
    async () => (await snapshot()).durations,
  );
  registry.registerMetric(histogram as unknown as Histogram);
  new Counter({
    name: 'report_etl_token_requests_total',
    help: 'Requests to the token endpoint by all report-etl processes (Redis counter).',
    registers: [registry],
    async collect() {
      const raw = await src.redis.get(tokenRequestsKey(src.keyPrefix));
      this.reset();
      this.inc(raw === null ? 0 : Number(raw));
    },
  });
  new Gauge({
    name: 'report_etl_queue_jobs',
    help: 'Jobs in the BullMQ queue by state, read at scrape time.',
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      const counts = await src.queue.getJobCounts(...QUEUE_STATES);
      for (const state of QUEUE_STATES) this.set({ state }, counts[state] ?? 0);
    },
  });
  const workersAlive = new OptionalGauge(
    'report_etl_workers_alive',
    'Worker processes (worker, start) connected to the queue and taking runs now, from the Redis client list.',
    async () => {
      // A Redis that refuses CLIENT LIST (an ACL without it: an error; a managed Redis without the command: BullMQ's
      // one made-up entry with no client id) cannot tell the count: the gauge is left out, the other metrics stay.
      const workers = await src.queue.getWorkers().catch(() => undefined);
      return !workers || workers.some((w) => w.id === undefined) ? undefined : workers.length;
    },
  );
  registry.registerMetric(workersAlive as unknown as Gauge);

  new Gauge({
    name: 'report_etl_login_required',
    help: 'User-dependent connections: 1 while runs fail with LOGIN_REQUIRED until `report-etl login <connection>`, 0 while logged in.',
    labelNames: ['connection'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const rows = await listConnectionLogins(src.pool);
      const waiting = (r: (typeof rows)[number]) => (r.login_required_at !== null || !r.logged_in ? 1 : 0);
      const configured = src.config?.current().connections;
      if (configured) {
        // The connections of the live jobs.yaml, each by its current server and client: one never logged in waits too.
        for (const [name, c] of Object.entries(configured)) {
          if (c.auth !== 'authorization_code') continue;
          const r = rows.find((x) => x.connection === name && x.base_url === c.baseUrl && x.client_id === c.clientId);
          this.set({ connection: name }, r ? waiting(r) : 1);
        }
        return;
      }
      for (const r of rows) {
        if (r.auth === 'authorization_code') this.set({ connection: r.connection }, waiting(r));
      }
    },
  });

  if (src.config) addJobMetrics(registry, src.pool, src.config);
  if (src.config && src.slots) addSlotMetrics(registry, src.slots, src.config);
  return { registry, render: () => registry.metrics(), contentType: registry.contentType };
}

/** The per-job gauges (last success, freshness, stale, failing, config validity), read at scrape time from the live config, etl.attempts and etl.job_alerts. */
function addJobMetrics(registry: Registry, pool: Queryable, config: LiveConfig): void {
  let pending:
    | Promise<{
        lastSuccess: Map<string, Date>;
        stale: Map<string, boolean>;
        freshnessSeconds: Map<string, number>;
        failing: Map<string, { failing: boolean; connection: string }>;
      }>
    | undefined;
  const read = async () => {
    const cfg = config.current();
    const jobs = Object.keys(cfg.jobs);
    const [health, seen] = await Promise.all([jobHealth(pool, jobs, 0), firstSeen(pool, jobs, false)]);
    const lastSuccess = new Map<string, Date>();
    const stale = new Map<string, boolean>();
    const freshnessSeconds = new Map<string, number>();
    const failing = new Map<string, { failing: boolean; connection: string }>();
    const now = new Date();
    for (const h of health) {
      const at = h.lastSuccess ? (h.lastSuccess.finished_at ?? h.lastSuccess.started_at) : undefined;
      if (at) lastSuccess.set(h.job, at);
      failing.set(h.job, { failing: h.failingSince !== undefined, connection: cfg.jobs[h.job]?.connection ?? '' });
      const f = freshnessOf(cfg, h.job);
      if (!f) continue;
      stale.set(h.job, staleness(at, seen.get(h.job), f.ms, now).stale);
      freshnessSeconds.set(h.job, f.ms / 1000);
    }
    return { lastSuccess, stale, freshnessSeconds, failing };
  };
  const snapshot = () => (pending ??= read().finally(() => (pending = undefined)));
  new Gauge({
    name: 'report_etl_job_last_success_timestamp_seconds',
    help: 'Unix time of the end of the newest succeeded run of each jobs.yaml job (absent when it never succeeded).',
    labelNames: ['job'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const [job, at] of (await snapshot()).lastSuccess) this.set({ job }, at.getTime() / 1000);
    },
  });
  new Gauge({
    name: 'report_etl_job_stale',
    help: 'Whether the last success of a job is older than its freshness (1) or not (0); jobs with a freshness only.',
    labelNames: ['job'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const [job, stale] of (await snapshot()).stale) this.set({ job }, stale ? 1 : 0);
    },
  });
  new Gauge({
    name: 'report_etl_job_freshness_seconds',
    help: "The freshness of each job that has one (jobs.yaml freshness, or its connection's), in seconds: the longest time since its last success.",
    labelNames: ['job'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const [job, seconds] of (await snapshot()).freshnessSeconds) this.set({ job }, seconds);
    },
  });
  new Gauge({
    name: 'report_etl_job_failing',
    help: "Whether a run of the job failed for good (after its last retry) and no run of it succeeded since (1) or not (0); connection: the job's jobs.yaml connection.",
    labelNames: ['job', 'connection'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const [job, f] of (await snapshot()).failing) this.set({ job, connection: f.connection }, f.failing ? 1 : 0);
    },
  });
  new Gauge({
    name: 'report_etl_job_config_invalid',
    help: 'Jobs of jobs.yaml that are invalid and do not run (1 each; see the admin overview or report-etl validate).',
    labelNames: ['job'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const e of config.invalid()) if (e.kind === 'job') this.set({ job: e.name }, 1);
    },
  });
}

/**
 * The per-connection report slot gauges (docs/architecture.md "A fleet"), read at scrape time from Redis for the
 * connections of the live jobs.yaml: `report_etl_report_slots_in_use{connection}`,
 * `report_etl_report_slots_limit{connection}` (maxConcurrentReports) and `report_etl_runs_waiting_for_slot{connection}`.
 */
function addSlotMetrics(registry: Registry, slots: Pick<ReportSlots, 'usage'>, config: LiveConfig): void {
  let pending: Promise<Array<{ connection: string; limit: number; held: number; waiting: number }>> | undefined;
  const read = async () => {
    const connections = Object.entries(config.current().connections);
    return Promise.all(
      connections.map(async ([connection, c]) => ({
        connection,
        limit: c.maxConcurrentReports,
        ...(await slots.usage(connection)),
      })),
    );
  };
  const snapshot = () => (pending ??= read().finally(() => (pending = undefined)));
  const gauge = (name: string, help: string, value: (u: Awaited<ReturnType<typeof read>>[number]) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['connection'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        for (const u of await snapshot()) this.set({ connection: u.connection }, value(u));
      },
    });
  gauge(
    'report_etl_report_slots_in_use',
    'Report jobs of each connection open on its server now (or about to be), across every worker.',
    (u) => u.held,
  );
  gauge(
    'report_etl_report_slots_limit',
    'maxConcurrentReports of each connection: the most report jobs it may have open on its server at once.',
    (u) => u.limit,
  );
  gauge(
    'report_etl_runs_waiting_for_slot',
    'Runs of each connection waiting for a report slot (they hold no attempt and no PostgreSQL connection).',
    (u) => u.waiting,
  );
}
