/**
 * The janitor (docs/architecture.md "Liveness"), in every long-running process and each `report-etl run`. A sweep
 * closes orphaned attempts (their report job DELETEd first: one whose DELETE fails stays `running` for the next
 * sweep), records failed the queued runs whose queue job vanished before a worker began them, deletes the report jobs
 * ended attempts left open on the server, sends `stale` alerts and prunes old history. Closing orphans is idempotent,
 * so `report-etl run` closes its own job's without the lease.
 */
import type pg from 'pg';
import type { Redis } from 'ioredis';
import { freshnessOf, checkFreshness } from '../alerts/freshness.ts';
import { makeRunAlerts } from '../alerts/run-alerts.ts';
import type { AlertSender } from '../alerts/webhook-sender.ts';
import { parseWindow } from '../config/duration.ts';
import type { EtlConfig } from '../config/schema.ts';
import { coerceError, EtlError } from '../errors.ts';
import { failAttempt, openReportJobsLeft, setReportJobDeleted } from '../history/attempts.ts';
import { queuedRunsNotBegun, type RunRow } from '../history/runs.ts';
import { shellQuote } from '../shell-quote.ts';
import { findOrphanedAttempts, orphanedAttemptsOf, type OwnedAttempt } from '../history/orphans.ts';
import { commaCount, readProgress, stoppedAtWords } from '../history/attempt-progress.ts';
import { pruneKeptPages } from '../history/page-archive.ts';
import { pruneHistory, type PruneResult } from '../history/retention.ts';
import type { Logger } from '../logger.ts';
import { defaultWorkerName } from '../pipeline/run-attempt.ts';
import { makeReportClients, type ReportClients } from '../report-api/client-registry.ts';
import { DEFAULT_QUEUE_PREFIX, ownerWorkerName } from './names.ts';
import type { RunQueue } from './queue.ts';
import { recordUnrunFailure } from './given-up.ts';
import { jobOfSubject, runSubjects } from '../config/mandants.ts';

/**
 * First half of the lease's two-part advisory lock key; the second is `hashtext` of the installation's prefix.
 * Two-part keys never meet the owner sessions' one-part keys.
 */
export const JANITOR_LEASE_CLASS = 731_022;

/** Default time between sweeps, in ms. */
const JANITOR_INTERVAL_MS = 30_000;

/**
 * Default time between the orphan checks done between sweeps, in ms: a dead worker's run goes on within seconds. A
 * check is one query on the running attempts (an index) and one advisory lock probe per owner.
 */
const ORPHAN_CHECK_MS = 5_000;

/**
 * How long a run stays queued without a worker beginning it before the janitor checks its queue job, in ms: longer
 * than the moment between a queue job's add and its etl.runs row.
 */
export const QUEUED_GRACE_MS = 5 * 60_000;

/**
 * How long after its attempt ended a report job still open on the server is left to the attempt's own DELETE, in ms:
 * after it, a sweep deletes it (its process died before the DELETE, or the DELETE failed).
 */
export const OPEN_REPORT_JOB_GRACE_MS = 2 * 60_000;

/**
 * How many orphaned attempts a queued run may have had before the janitor stops handing its queue job back at once:
 * later ones wait for BullMQ's stalled-job check, whose `maxStalledCount` fails a run that kills its worker each time
 * (out of memory, say) instead of running it for ever.
 */
export const MAX_HANDBACKS = 2;

/** The time an attempt's progress was written, or undefined when it has none (or one that is not a time). */
function lastHeardOf(at: string | undefined): Date | undefined {
  const t = at === undefined ? NaN : Date.parse(at);
  return Number.isNaN(t) ? undefined : new Date(t);
}

/** The later of two times, either of them unknown. */
function latest(a: Date | undefined, b: Date | undefined): Date | undefined {
  if (!a || !b) return a ?? b;
  return a > b ? a : b;
}

/** What {@link makeJanitor} needs. */
export interface JanitorDeps {
  pool: pg.Pool;
  /** For the report clients' shared tokens. */
  redis: Redis;
  logger: Logger;
  config: () => EtlConfig;
  /** The invalid jobs now: their history is pruned too. */
  invalidJobs?: () => string[];
  alerts: AlertSender;
  /** Report clients to share (a worker's); default its own. */
  clients?: ReportClients;
  /** The queue prefix: one lease per installation. */
  prefix?: string;
  /** Default {@link JANITOR_INTERVAL_MS}. */
  intervalMs?: number;
  /** Time between orphan checks in ms; default {@link ORPHAN_CHECK_MS}, or `intervalMs` when shorter. */
  orphanCheckMs?: number;
  /** The clock (tests). */
  now?: () => Date;
}

/** One orphaned attempt the janitor handled. */
export interface ClosedOrphan {
  attemptId: string;
  job: string;
  reportJobId: string | null;
  /** False: its report job could not be deleted; tried again next sweep. */
  closed: boolean;
  /**
   * It was no longer `running` when the janitor came to record it: its process ended it as it died (a COMMIT in
   * flight commits). Its report job was deleted all the same; nothing was recorded, its run not handed back.
   */
  finished?: boolean;
  /** Its run's queue job, still held by the dead process, was handed back to the queue for the next worker. */
  handedBack?: boolean;
}

/** A queued run whose queue job vanished before a worker began it, recorded failed with QUEUE_JOB_LOST. */
export interface LostQueuedRun {
  job: string;
  runKey: string;
  queueJobId: string;
  /** The attempt recorded to hold the failure. */
  attemptId: string;
}

/** What one sweep did. */
export interface SweepResult {
  /** False: another process is sweeping, nothing was done. */
  leased: boolean;
  orphans: ClosedOrphan[];
  /** Queued runs found lost this sweep. */
  lostQueued: LostQueuedRun[];
  /** Report jobs that ended attempts had left open on the server, deleted this sweep (a whole sweep's part). */
  openReportJobs?: string[];
  /** Jobs stale now. */
  stale: string[];
  pruned?: PruneResult;
}

/** A janitor. */
export interface Janitor {
  /** One sweep under the lease; an error of one part is logged and does not stop the others. */
  sweep(): Promise<SweepResult>;
  /** Closes the orphaned attempts of `jobs` now, without the lease. */
  closeOrphans(jobs: readonly string[]): Promise<ClosedOrphan[]>;
  /** Sweeps now and then every `intervalMs`, and closes orphans every `orphanCheckMs` in between, until close(). */
  start(): void;
  /** Stops sweeping and waits for a sweep in progress. Idempotent. */
  close(): Promise<void>;
}

/** Makes a janitor; nothing runs before start() or a call. */
export function makeJanitor(deps: JanitorDeps): Janitor {
  const prefix = deps.prefix ?? DEFAULT_QUEUE_PREFIX;
  const log = deps.logger.child({ component: 'janitor' });
  const me = defaultWorkerName();
  const ownClients = deps.clients ? undefined : makeReportClients(deps.redis, deps.logger, undefined, `${prefix}:`);
  const clients = deps.clients ?? ownClients!;
  const now = deps.now ?? (() => new Date());
  const runAlerts = makeRunAlerts(deps.pool, deps.alerts, deps.logger);
  let queue: RunQueue | undefined;
  /** When this process's orphan checks last found each owner of a running attempt alive (owner key → time). */
  const seenAlive = new Map<string, Date>();
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<unknown> | undefined;
  let closing: Promise<void> | undefined;

  /** The installation's queue, made at first use: BullMQ would cost `report-etl run` 9 MB and 100 ms of start. */
  const queueOf = async (): Promise<RunQueue> => {
    const { makeQueue } = await import('./queue.ts');
    return (queue ??= makeQueue(deps.redis, prefix));
  };

  /**
   * DELETEs report job `reportJobId` of an attempt of `subject` with its connection's token, and records it deleted.
   * @returns false when `subject` or its connection is gone from jobs.yaml: nothing was done
   * @throws the server's error, the database's
   */
  const deleteReportJobOf = async (
    config: EtlConfig,
    subject: string,
    attemptId: string,
    reportJobId: string,
  ): Promise<boolean> => {
    const job = jobOfSubject(config, subject);
    const connection = job ? config.connections[job.connection] : undefined;
    if (!job || !connection) return false;
    const lease = await clients.acquire(job.connection, connection);
    try {
      await lease.client.deleteJob(reportJobId);
      await setReportJobDeleted(deps.pool, attemptId);
      return true;
    } finally {
      lease.release();
    }
  };

  /**
   * Closes one orphaned attempt: `kept` when its report job could not be deleted, `finished` when the attempt was
   * no longer running by the time it was to be recorded.
   */
  const closeOne = async (o: OwnedAttempt, config: EtlConfig): Promise<'closed' | 'kept' | 'finished'> => {
    const about = { job: o.job, attemptId: o.attempt_id, reportJobId: o.report_job_id };
    if (o.report_job_id) {
      try {
        await deleteReportJobOf(config, o.job, o.attempt_id, o.report_job_id);
      } catch (err) {
        log.warn(
          { ...about, err: coerceError(err).message },
          'orphaned attempt: could not delete its report job; trying again at the next sweep',
        );
        return 'kept';
      }
    }
    const what = o.report_job_id
      ? `deleted its report job ${o.report_job_id}`
      : 'found no report job recorded (it died before the server created one)';
    const progress = readProgress(o.progress);
    // Where it stopped, as it recorded while it loaded (etl.attempts.progress): it had no chance to say more.
    const stopped = progress ? `; it ${stoppedAtWords(progress, commaCount)}` : '';
    const message =
      `orphaned: the process that ran attempt ${o.attempt} (${o.worker ?? 'unknown'}) ended without finishing it ` +
      `(killed, crashed, or lost its database session)${stopped}; nothing was committed; the janitor of ${me} ${what}`;
    const noticedAt = now();
    // Only while it is still running: its process may have sent its COMMIT as it died, which PostgreSQL completes.
    const ended = await failAttempt(
      deps.pool,
      o.attempt_id,
      {
        status: 'interrupted',
        stage: o.report_job_id ? 'load' : 'start',
        errorKind: 'ORPHANED',
        retryable: true,
        message,
        details: {
          reportJobId: o.report_job_id,
          worker: o.worker,
          janitor: me,
          noticedAt: noticedAt.toISOString(),
          ...(progress ? { progress } : {}),
        },
        // It ended when it was last known alive (its last progress, or an orphan check here that found its owner
        // alive), not when the janitor came by; else at its start.
        lastAliveAt: latest(lastHeardOf(progress?.at), seenAlive.get(o.owner_lock)) ?? o.started_at,
      },
      { onlyRunning: true },
    );
    if (!ended) {
      log.info(
        { ...about, worker: o.worker },
        'an attempt whose process died had finished all the same (its COMMIT was under way): left as it was, its run ' +
          'not handed back (its report job, if it had one, deleted)',
      );
      return 'finished';
    }
    log.warn({ ...about, worker: o.worker }, 'orphaned attempt closed: recorded interrupted, report job deleted');
    return 'closed';
  };

  /**
   * Hands the queue job of a closed orphan's run back to the queue, so that the next worker takes the run now rather
   * than when BullMQ's lock of the dead worker runs out and its stalled-job check comes by (up to a minute and a half
   * by default). Only a queue job of the run still active and taken by the dead owner's worker (its `processedBy`),
   * the run's first or a replay's, with at most {@link MAX_HANDBACKS} attempts closed as orphans since it was added,
   * this one included: a job another worker took meanwhile is left alone.
   * @returns whether it was handed back
   */
  const handBack = async (o: OwnedAttempt): Promise<boolean> => {
    const worker = ownerWorkerName(o.owner_lock);
    const active = await (await queueOf()).getActive();
    const job = active.find((j) => j.data.runKey === o.run_key && j.processedBy === worker);
    if (!job) return false;
    const since = new Date(job.timestamp);
    if ((await orphanedAttemptsOf(deps.pool, o.job, o.run_key, since)).orphaned > MAX_HANDBACKS) return false;
    if ((await job.getState()) !== 'active') return false;
    // No token: the dead worker's cannot be known. Its lock key stays until it expires; the next worker's replaces it.
    if ((await job.moveToWait()) < 0) return false;
    log.info(
      { job: o.job, runKey: o.run_key, queueJobId: job.id, attemptId: o.attempt_id },
      "orphaned attempt's run handed back to the queue: the next worker takes it now",
    );
    return true;
  };

  const closeOrphans = async (jobs: readonly string[]): Promise<ClosedOrphan[]> => {
    const config = deps.config();
    const known = jobs.filter((j) => jobOfSubject(config, j) !== undefined);
    const out: ClosedOrphan[] = [];
    // The real clock, not deps.now: it is compared with the attempts' times in PostgreSQL.
    const checkedAt = new Date();
    let alive: readonly string[] = [];
    const orphans = await findOrphanedAttempts(deps.pool, known, (keys) => (alive = keys));
    // Kept only for the owners of running attempts, alive or orphaned: as many as there are running attempts.
    const keep = new Set([...alive, ...orphans.map((o) => o.owner_lock)]);
    for (const k of seenAlive.keys()) if (!keep.has(k)) seenAlive.delete(k);
    for (const k of alive) seenAlive.set(k, checkedAt);
    for (const o of orphans) {
      const about = { job: o.job, attemptId: o.attempt_id };
      const outcome = await closeOne(o, config).catch((err: unknown) => {
        log.warn(
          { ...about, err: coerceError(err).message },
          'orphaned attempt: could not close it; trying again at the next sweep',
        );
        return 'kept' as const;
      });
      const closed = outcome !== 'kept';
      const finished = outcome === 'finished';
      const handedBack =
        outcome === 'closed' &&
        (await handBack(o).catch((err: unknown) => {
          log.warn(
            { ...about, err: coerceError(err).message },
            "orphaned attempt: could not hand its run back to the queue; BullMQ's stalled-job check will",
          );
          return false;
        }));
      out.push({
        attemptId: o.attempt_id,
        job: o.job,
        reportJobId: o.report_job_id,
        closed,
        handedBack,
        ...(finished ? { finished } : {}),
      });
    }
    return out;
  };

  /** Whether the queue job is gone from Redis; throws when Redis cannot tell. */
  const queueJobGone = async (id: string): Promise<boolean> => (await (await queueOf()).getJob(id)) === undefined;

  /** Records one lost queued run failed: an attempt `failed` at once with QUEUE_JOB_LOST, and its alert. */
  const recordLost = async (run: RunRow, config: EtlConfig): Promise<LostQueuedRun> => {
    const queueJobId = run.queue_job_id!;
    const queuedAt = run.queued_at?.toISOString() ?? 'unknown';
    const error = new EtlError(
      'QUEUE_JOB_LOST',
      `${run.trigger} run queued at ${queuedAt} as queue job ${queueJobId}: the queue job vanished from Redis ` +
        `before a worker began it (Redis lost its data, e.g. a restart without persistence); nothing ran, ` +
        `nothing was loaded; the janitor of ${me} recorded it: ` +
        `report-etl replay ${shellQuote(run.run_key)} --job ${shellQuote(run.job)}`,
      { retryable: false, stage: 'start', details: { queueJobId, queuedAt, janitor: me } },
    );
    const attemptId = await recordUnrunFailure(deps.pool, config, runAlerts, {
      job: run.job,
      runKey: run.run_key,
      trigger: run.trigger,
      scheduledFor: run.scheduled_for ?? undefined,
      logicalStart: run.logical_start ?? undefined,
      logicalEnd: run.logical_end ?? undefined,
      queuedAt: run.queued_at ?? undefined,
      error,
      worker: me,
    });
    log.error({ job: run.job, runKey: run.run_key, queueJobId, attemptId }, error.message);
    return { job: run.job, runKey: run.run_key, queueJobId, attemptId };
  };

  /**
   * The queued runs older than {@link QUEUED_GRACE_MS} with no attempt whose queue job is gone, checked twice (a
   * worker may begin one between the query and the check), recorded failed and alerted.
   */
  const closeLostQueued = async (jobs: readonly string[]): Promise<LostQueuedRun[]> => {
    const config = deps.config();
    const before = new Date(now().getTime() - QUEUED_GRACE_MS);
    const out: LostQueuedRun[] = [];
    for (const run of await queuedRunsNotBegun(deps.pool, jobs, before)) {
      if (!(await queueJobGone(run.queue_job_id!))) continue;
      const again = await queuedRunsNotBegun(deps.pool, [run.job], before);
      if (!again.some((r) => r.run_key === run.run_key) || !(await queueJobGone(run.queue_job_id!))) continue;
      out.push(await recordLost(run, config));
    }
    return out;
  };

  /**
   * DELETEs the report jobs that attempts ended over {@link OPEN_REPORT_JOB_GRACE_MS} ago left open on the server (a
   * process killed between its COMMIT and its DELETE, a DELETE that failed), and records them deleted; one whose
   * DELETE fails again is kept for the next sweep.
   * @returns the ids of the report jobs deleted
   */
  const deleteOpenReportJobs = async (jobs: readonly string[]): Promise<string[]> => {
    const config = deps.config();
    const before = new Date(now().getTime() - OPEN_REPORT_JOB_GRACE_MS);
    const deleted: string[] = [];
    for (const left of await openReportJobsLeft(deps.pool, jobs, before)) {
      const about = { job: left.job, attemptId: left.attemptId, reportJobId: left.reportJobId };
      try {
        if (!(await deleteReportJobOf(config, left.job, left.attemptId, left.reportJobId))) continue;
        deleted.push(left.reportJobId);
        log.warn(
          { ...about, finishedAt: left.finishedAt.toISOString() },
          'report job left open on the server by an ended attempt (its process died before deleting it, or the ' +
            'DELETE failed): deleted now',
        );
      } catch (err) {
        log.warn(
          { ...about, err: coerceError(err).message },
          'report job left open on the server: could not delete it; trying again at the next sweep',
        );
      }
    }
    return deleted;
  };

  /** `p`, or `fallback` with an error logged when one part of a sweep fails. */
  const orElse = <T>(p: Promise<T>, part: string, fallback: T): Promise<T> =>
    p.catch((err: unknown) => {
      log.error({ err: coerceError(err).message }, `janitor: ${part} failed`);
      return fallback;
    });

  /** The parts of a sweep under the lease, in turn; one that fails is logged and the others still run. */
  const sweepParts = async (): Promise<SweepResult> => {
    const config = deps.config();
    const jobs = runSubjects(config).map((s) => s.name);
    const orphans = await orElse(closeOrphans(jobs), 'orphan check', []);
    const lostQueued = await orElse(closeLostQueued(jobs), 'lost queued runs check', []);
    const openReportJobs = await orElse(deleteOpenReportJobs(jobs), 'open report jobs check', []);
    const stale = jobs.some((j) => freshnessOf(config, j))
      ? await orElse(checkFreshness(deps.pool, config, deps.alerts, now()), 'freshness check', [])
      : [];
    const before = new Date(now().getTime() - parseWindow(config.history.keep)!);
    const allJobs = [...jobs, ...(deps.invalidJobs?.() ?? [])];
    const pruned = await orElse(pruneHistory(deps.pool, allJobs, before), 'history pruning', undefined);
    if (pruned?.attempts || pruned?.runs) log.info({ ...pruned, keep: config.history.keep }, 'run history pruned');
    const keptPages = await orElse(pruneKeptPages(deps.pool, allJobs, now()), 'kept pages pruning', 0);
    if (keptPages) log.info({ attempts: keptPages }, 'kept pages past their keepDays deleted');
    return { leased: true, orphans, lostQueued, openReportJobs, stale, ...(pruned ? { pruned } : {}) };
  };

  /** The orphan check between sweeps: the first part of a sweep alone. */
  const orphanParts = async (): Promise<SweepResult> => {
    const jobs = runSubjects(deps.config()).map((s) => s.name);
    const orphans = await orElse(closeOrphans(jobs), 'orphan check', []);
    return { leased: true, orphans, lostQueued: [], stale: [] };
  };

  /** `parts` under the lease; nothing when another process holds it. */
  const leased = async (parts: () => Promise<SweepResult>): Promise<SweepResult> => {
    const client = await deps.pool.connect();
    const lease = [JANITOR_LEASE_CLASS, prefix];
    try {
      const { rows } = await client.query<{ got: boolean }>(
        'SELECT pg_try_advisory_lock($1, hashtext($2)) AS got',
        lease,
      );
      if (!rows[0]?.got) return { leased: false, orphans: [], lostQueued: [], stale: [] };
      try {
        return await parts();
      } finally {
        await client.query('SELECT pg_advisory_unlock($1, hashtext($2))', lease).catch(() => undefined);
      }
    } finally {
      client.release();
    }
  };

  const tracked = <T>(p: Promise<T>): Promise<T> => {
    current = p.catch(() => undefined);
    return p;
  };
  const intervalMs = deps.intervalMs ?? JANITOR_INTERVAL_MS;
  const checkMs = Math.min(deps.orphanCheckMs ?? ORPHAN_CHECK_MS, intervalMs);
  let lastSweep = -Infinity;
  // Every checkMs: a whole sweep once intervalMs went by since the last one, else the orphan check alone.
  const tick = () => {
    if (closing) return;
    const whole = performance.now() - lastSweep >= intervalMs - checkMs / 2;
    if (whole) lastSweep = performance.now();
    void tracked(leased(whole ? sweepParts : orphanParts))
      .catch((err: unknown) => log.error({ err: coerceError(err).message }, 'janitor sweep failed'))
      .finally(() => {
        if (!closing) timer = setTimeout(tick, checkMs);
      });
  };
  return {
    sweep: () => tracked(leased(sweepParts)),
    closeOrphans: (jobs) => tracked(closeOrphans(jobs)),
    start() {
      if (!timer && !closing) timer = setTimeout(tick, 0);
    },
    close() {
      closing ??= (async () => {
        if (timer) clearTimeout(timer);
        await current;
        await queue?.close();
        await ownClients?.close();
      })();
      return closing;
    },
  };
}
