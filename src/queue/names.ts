/**
 * Names in Redis: the BullMQ queue, the key prefix, and the deterministic job id of a logical run
 * (docs/architecture.md "Flow of one run": `jobId = <job>__<tick ISO>`, deduplicated).
 */
import { prefixForRedis } from '../redis-url.ts';

/** The one BullMQ queue every scheduler, worker and CLI command shares. */
export const QUEUE_NAME = 'report-etl';

/** Default BullMQ key prefix (BullMQ `prefix` option); tests pass a unique one so files can run in parallel. */
export const DEFAULT_QUEUE_PREFIX = 'report-etl';

/**
 * The queue prefix of this process: `$REPORT_ETL_QUEUE_PREFIX` or {@link DEFAULT_QUEUE_PREFIX}; on a Redis Cluster
 * (REDIS_URL) the default is hash-tagged, `{report-etl}` (redis-url.ts prefixForRedis).
 * @throws ConfigError for a prefix without a hash tag on a Redis Cluster
 */
export function queuePrefixFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  const given = env.REPORT_ETL_QUEUE_PREFIX;
  return prefixForRedis(given || DEFAULT_QUEUE_PREFIX, env.REDIS_URL, Boolean(given));
}

/**
 * A tick as compact UTC ISO 8601 without ':' or '-': `20260122T021500Z`, with `.123` before the Z when the tick
 * has milliseconds. Sorts like the time it stands for.
 */
export function compactIso(tick: Date): string {
  const iso = tick.toISOString(); // 2026-01-22T02:15:00.000Z
  const ms = iso.slice(20, 23);
  return `${iso.slice(0, 19).replace(/[-:]/g, '')}${ms === '000' ? '' : `.${ms}`}Z`;
}

/**
 * BullMQ job id of the logical run of `job` at `tick`: `<job>__<compact UTC ISO>`, e.g.
 * `sales_orders__20260122T021500Z`. Every scheduler computes the same id for the same tick, so BullMQ's custom
 * id deduplication makes N schedulers enqueue exactly one run per tick. BullMQ rejects custom ids that contain
 * ':' (unless they have the legacy 3-part repeat form) or that are integers (Job.validateOptions); job names are
 * `[A-Za-z0-9_.-]+` (jobs.yaml schema) and the tick has no ':', so the id is always valid.
 * The same id is the run key (etl.runs.run_key) of the logical run.
 */
export function tickQueueJobId(job: string, tick: Date): string {
  return `${job}__${compactIso(tick)}`;
}

/**
 * BullMQ job id, and run key, of a forced run of `job` at `tick` (`backfill --force`):
 * `<job>__<compact UTC ISO>__force_<nonce>`, e.g. `sales_orders__20260122T021500Z__force_1a2b3c4d`. A new logical
 * run of a tick that already ran: the nonce keeps it apart from the scheduled run's id (kept by BullMQ for 7 days)
 * and run key (append's exactly-once claim), so it runs and loads again. `nonce`: a few lower-case hex digits.
 */
export function forcedQueueJobId(job: string, tick: Date, nonce: string): string {
  return `${tickQueueJobId(job, tick)}__force_${nonce}`;
}

/** BullMQ job id of a manual run (`enqueue`): `<job>__manual_<runKey>`; each manual request is its own run. */
export function manualQueueJobId(job: string, runKey: string): string {
  return `${job}__manual_${runKey}`;
}

/**
 * BullMQ job id of a replay of a run after its failed attempt: `<original id>__replay_<attempt id>`. Replaying the
 * run twice after the same failed attempt is deduplicated; a replay that fails again can itself be replayed (its
 * attempt has a new id). A replay that accepts the target's guard (`--accept-guard`) ends in `_accept_guard`, so that it
 * is not taken for a plain replay of the same attempt queued before.
 */
export function replayQueueJobId(queueJobId: string, failedAttemptId: string, acceptGuard = false): string {
  return `${queueJobId.replace(/__replay_[0-9a-f-]{36}(?:_accept_guard)?$/, '')}__replay_${failedAttemptId}${acceptGuard ? '_accept_guard' : ''}`;
}

/** Redis key of the overlap lock of `job` (one run of a job at a time, across all workers). */
export function overlapLockKey(prefix: string, job: string): string {
  return `${prefix}:${QUEUE_NAME}:overlap:${job}`;
}
