/** Names in Redis: the queue, the key prefix, and the queue job ids (docs/architecture.md "Flow of one run"). */
import { prefixForRedis } from '../redis-url.ts';

/** The one BullMQ queue of runs. */
export const QUEUE_NAME = 'report-etl';

/** Default BullMQ key prefix. */
export const DEFAULT_QUEUE_PREFIX = 'report-etl';

/**
 * `$REPORT_ETL_QUEUE_PREFIX` or {@link DEFAULT_QUEUE_PREFIX}, hash-tagged on a Redis Cluster (redis-url.ts).
 * @throws ConfigError for a given prefix without a hash tag on a Redis Cluster
 */
export function queuePrefixFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  const given = env.REPORT_ETL_QUEUE_PREFIX;
  return prefixForRedis(given || DEFAULT_QUEUE_PREFIX, env.REDIS_URL, Boolean(given));
}

/** A tick as compact UTC ISO 8601, `20260122T021500Z` (`.123` before the Z for milliseconds); sorts by time. */
export function compactIso(tick: Date): string {
  const iso = tick.toISOString(); // 2026-01-22T02:15:00.000Z
  const ms = iso.slice(20, 23);
  return `${iso.slice(0, 19).replace(/[-:]/g, '')}${ms === '000' ? '' : `.${ms}`}Z`;
}

/**
 * Queue job id and run key of the run of `job` at `tick`, `sales_orders__20260122T021500Z`: every scheduler
 * computes the same, so BullMQ's id deduplication queues one run per tick. BullMQ refuses ids with ':' or that are
 * integers; job names are `[A-Za-z0-9_.-]+` and the tick has no ':'.
 */
export function tickQueueJobId(job: string, tick: Date): string {
  return `${job}__${compactIso(tick)}`;
}

/**
 * Queue job id and run key of a forced run (`backfill --force`), `<tick id>__force_<nonce>`: a new logical run of a
 * tick, apart from the scheduled run's id and run key, so that it runs and loads again. `nonce`: a few hex digits.
 */
export function forcedQueueJobId(job: string, tick: Date, nonce: string): string {
  return `${tickQueueJobId(job, tick)}__force_${nonce}`;
}

/** Queue job id of a manual run (`enqueue`): `<job>__manual_<runKey>`. */
export function manualQueueJobId(job: string, runKey: string): string {
  return `${job}__manual_${runKey}`;
}

/**
 * Queue job id of a replay after a failed attempt, `<original id>__replay_<attempt id>[_accept_guard][_from_pages]`: a
 * second replay after the same attempt is deduplicated; one past the guard or from kept pages is not a plain one.
 */
export function replayQueueJobId(
  queueJobId: string,
  failedAttemptId: string,
  acceptGuard = false,
  fromPages = false,
): string {
  const original = queueJobId.replace(/__replay_[0-9a-f-]{36}(?:_accept_guard)?(?:_from_pages)?$/, '');
  return `${original}__replay_${failedAttemptId}${acceptGuard ? '_accept_guard' : ''}${fromPages ? '_from_pages' : ''}`;
}

/** Redis key of the overlap lock of `job` (overlap-lock.ts). */
export function overlapLockKey(prefix: string, job: string): string {
  return `${prefix}:${QUEUE_NAME}:overlap:${job}`;
}

/**
 * The BullMQ worker name of a process whose attempts are owned by the owner lock `ownerKey` (attempt-owner.ts): stored
 * on each queue job it takes (`processedBy`), so that the janitor can tell that a queue job is held by a dead process
 * (docs/operations.md "No orphans (the janitor)").
 */
export function ownerWorkerName(ownerKey: string): string {
  return `owner:${ownerKey}`;
}
