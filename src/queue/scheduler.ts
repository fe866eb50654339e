/**
 * The scheduler: one node-cron task per scheduled job in its zone. Each tick queues its run under
 * {@link tickQueueJobId}, so that schedulers side by side queue one run per tick (BullMQ's own Job Schedulers race).
 * On start it catches up on missed ticks (`catchup`); config changes add, remove and reschedule tasks.
 */
import type pg from 'pg';
import type { Queryable } from '../db.ts';
import { createTask, type ScheduledTask } from 'node-cron';
import type { EtlConfig, JobConfig } from '../config/schema.ts';
import { parseWindow } from '../config/duration.ts';
import { resolveJob } from '../config/load.ts';
import { scheduleZone } from '../config/job-zone.ts';
import { previousTick } from '../pipeline/logical-time.ts';
import { coerceError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { cronTicks } from '../config/cron-ticks.ts';
import type { LiveConfig } from '../config/live-config.ts';
import { tickQueueJobId } from './names.ts';
import { subjectsOfJob } from '../config/mandants.ts';
import { enqueueRun, retryOf, type RunQueue } from './queue.ts';
import type { RunRequest, TickTrigger } from '../vocabulary.ts';
import { lastScheduledTick } from '../history/attempts.ts';
import { ATTR, inSpan } from '../tracing.ts';

/** What {@link makeScheduler} needs. */
export interface SchedulerDeps {
  config: LiveConfig;
  queue: RunQueue;
  pool: pg.Pool;
  logger: Logger;
  /** The clock (tests). */
  now?: () => Date;
  /** Default node-cron's; tests fire ticks with their own. */
  createTask?: typeof createTask;
}

/** A scheduler. */
export interface Scheduler {
  /** Catches up on missed ticks, then starts one cron task per scheduled job and follows config changes. */
  start(): Promise<void>;
  /** Stops every task and waits for enqueues in flight. Idempotent. */
  close(): Promise<void>;
  /** The jobs with a running task, to their `schedule@zone`. */
  scheduled(): Record<string, string>;
}

/** How late a tick node-cron reports as missed may be and still be queued, in ms. */
const LATE_TICK_MAX_MS = 60_000;

/**
 * Queues the run of `job` for `tick`, its logical interval from the schedule's previous tick fixed now, so that a
 * replay runs the same interval even after a change of schedule.
 * @param id queue job id and run key
 * @param history records the run as queued when given (queue.ts enqueueRun)
 * @returns whether this call queued it
 * @throws ConfigError for an unknown job
 */
export async function enqueueTick(
  queue: RunQueue,
  config: EtlConfig,
  job: string,
  tick: Date,
  trigger: TickTrigger,
  id = tickQueueJobId(job, tick),
  history?: Queryable,
): Promise<{ jobId: string; added: boolean }> {
  const req: RunRequest = {
    job,
    trigger,
    scheduledFor: tick.toISOString(),
    logicalEnd: tick.toISOString(),
    runKey: id,
  };
  const previous = previousTick(resolveJob(config, job), tick);
  if (previous) req.logicalStart = previous.toISOString();
  return enqueueRun(queue, req, { jobId: id, ...retryOf(config, job), history });
}

/** Makes a scheduler; nothing runs before start(). */
export function makeScheduler(deps: SchedulerDeps): Scheduler {
  const log = deps.logger.child({ component: 'scheduler' });
  const now = deps.now ?? (() => new Date());
  const tasks = new Map<string, { key: string; task: ScheduledTask }>();
  const inFlight = new Set<Promise<unknown>>();
  // Said once when no schedule is in force, not at every change.
  let saidNoSchedule = false;
  let unsubscribe: (() => void) | undefined;
  let closing: Promise<void> | undefined;

  const onTick = async (name: string, at: Date) => {
    const config = deps.config.current();
    const job = config.jobs[name];
    if (!job?.schedule) return;
    let tick = new Date(Math.floor(at.getTime() / 1000) * 1000);
    // Where the clocks go back, node-cron fires a repeated local time once, at its second coming (02:15 CET, not
    // 02:15 CEST): the tick of that local time is the first (cron-ticks.ts), queued now, an hour late. A firing at
    // both comings would queue it once: the tick's queue job id is the same.
    const ticks = cronTicks(job.schedule, scheduleZone(config, job));
    if (ticks.repeats(tick)) {
      const fired = tick.toISOString();
      tick = ticks.firstOf(tick);
      log.info(
        { job: name, tick: tick.toISOString(), fired },
        'tick of a local time the clocks repeated: queued for its first coming (clocks went back)',
      );
    }
    // One run per mandant of a list job (config/mandants.ts), each queued on its own.
    for (const subject of subjectsOfJob(name, job)) {
      // The queued run's trace begins here (docs/observability.md "Tracing").
      const { jobId, added } = await inSpan(
        'scheduler tick',
        { attributes: { [ATTR.job]: subject.name, [ATTR.tick]: tick.toISOString() } },
        () => enqueueTick(deps.queue, config, subject.name, tick, 'schedule', undefined, deps.pool),
      );
      log.info(
        { job: subject.name, tick: tick.toISOString(), queueJobId: jobId, added },
        added ? 'tick: run queued' : 'tick: run was queued by another scheduler',
      );
    }
  };

  const queueTick = (name: string, date: Date) => {
    const p = onTick(name, date).catch((err: unknown) =>
      log.error({ job: name, err: coerceError(err).message }, 'tick: could not queue the run'),
    );
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
    return p;
  };

  const apply = (config: EtlConfig) => {
    const wanted = new Map<string, string>();
    for (const [name, job] of Object.entries(config.jobs)) {
      if (job.schedule) wanted.set(name, `${job.schedule}@${scheduleZone(config, job)}`);
    }
    const removed: string[] = [];
    const added: string[] = [];
    for (const [name, t] of tasks) {
      if (wanted.get(name) !== t.key) {
        void t.task.destroy();
        tasks.delete(name);
        removed.push(name);
      }
    }
    for (const [name, key] of wanted) {
      if (tasks.has(name)) continue;
      const job = config.jobs[name]!;
      const task = (deps.createTask ?? createTask)(job.schedule!, (ctx) => queueTick(name, ctx.date), {
        timezone: scheduleZone(config, job),
        name: `report-etl:${name}`,
      });
      // node-cron drops a tick it fires over a second late (a busy event loop): queue it anyway, its id keeps it
      // to one run. Ticks missed by far more (a paused process) are left to `catchup` at the next start.
      task.on('execution:missed', (ctx) => {
        const late = { job: name, tick: ctx.date.toISOString(), lateMs: now().getTime() - ctx.date.getTime() };
        if (late.lateMs <= LATE_TICK_MAX_MS) {
          log.warn(late, 'tick fired late: queueing it anyway');
          return queueTick(name, ctx.date);
        }
        log.warn(late, 'tick missed long ago (process paused?): not queued; catch-up applies at the next start');
      });
      void task.start();
      tasks.set(name, { key, task });
      added.push(name);
    }
    const rescheduled = added.filter((n) => removed.includes(n));
    if (added.length || removed.length) {
      log.info(
        {
          added: added.filter((n) => !rescheduled.includes(n)),
          removed: removed.filter((n) => !rescheduled.includes(n)),
          rescheduled,
        },
        'schedules in force',
      );
    }
    if (tasks.size === 0 && !saidNoSchedule) {
      const invalid = deps.config.invalid().flatMap((e) => (e.kind === 'job' ? [e.name] : []));
      const skipped = invalid.length
        ? ` (invalid, skipped: ${invalid.join(', ')}; \`report-etl validate\` lists their problems)`
        : '';
      log.warn({ invalid }, `no schedule in force: no valid job of jobs.yaml has a schedule${skipped}`);
    }
    saidNoSchedule = tasks.size === 0;
  };

  const catchUp = async (config: EtlConfig, name: string, job: JobConfig) => {
    if (!job.schedule || job.catchup === 'none') return;
    for (const subject of subjectsOfJob(name, job)) await catchUpSubject(config, subject.name, job, job.schedule);
  };

  const catchUpSubject = async (config: EtlConfig, name: string, job: JobConfig, schedule: string) => {
    const last = await lastScheduledTick(deps.pool, name);
    if (!last) {
      log.info({ job: name }, 'catch-up: no scheduled run recorded yet, nothing missed');
      return;
    }
    const ticks = cronTicks(schedule, scheduleZone(config, job));
    const until = now();
    let from = last;
    if (typeof job.catchup === 'object') {
      const windowMs = parseWindow(job.catchup.all) ?? 0;
      from = new Date(Math.max(last.getTime(), until.getTime() - windowMs));
    }
    const found = ticks.between(from, until, job.catchup === 'latest' ? 1 : undefined);
    let queued = 0;
    for (const tick of found.ticks) {
      if ((await enqueueTick(deps.queue, config, name, tick, 'catchup', undefined, deps.pool)).added) queued += 1;
    }
    if (found.ticks.length) {
      log.info(
        { job: name, missed: found.ticks.length, queued, since: last.toISOString(), truncated: found.truncated },
        'catch-up: missed ticks queued',
      );
    }
  };

  return {
    async start() {
      const config = deps.config.current();
      for (const [name, job] of Object.entries(config.jobs)) {
        await catchUp(config, name, job).catch((err: unknown) =>
          log.error({ job: name, err: coerceError(err).message }, 'catch-up failed'),
        );
      }
      if (closing) return;
      apply(config);
      unsubscribe = deps.config.onChange((c) => {
        if (!closing) apply(c);
      });
    },
    scheduled: () => Object.fromEntries([...tasks].map(([name, t]) => [name, t.key])),
    close() {
      closing ??= (async () => {
        unsubscribe?.();
        await Promise.all([...tasks.values()].map((t) => t.task.destroy()));
        tasks.clear();
        await Promise.allSettled([...inFlight]);
        log.info('scheduler stopped');
      })();
      return closing;
    },
  };
}
