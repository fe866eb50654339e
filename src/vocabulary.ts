/**
 * The words every part of report-etl shares (DESIGN.md "Layout"): output types, write modes, how a run came to
 * be, the status of an attempt, the stage an error happened in, and what a queued run asks for. Each list is
 * defined once here; the jobs.yaml schema, the run history, the queue and the admin pages derive from it.
 *
 * Terms: a **run** is the logical run (one tick of a schedule, one manual request; its `run key`), an
 * **attempt** is one try of it (one `etl.runs` row, `run_id`). "Job" alone is ambiguous: a **jobs.yaml job** is
 * an entry under `jobs:`, a **queue job** is a BullMQ job, a **report job** is the server's job (spec "Job").
 */

/**
 * Output types report-etl loads (spec "Output types"; the generic ones that "work with most report outputs").
 * The first is the default of `report.outputType`.
 */
export const OUTPUT_TYPES = ['json', 'json_compact', 'txt', 'xml_query'] as const;
/** One of {@link OUTPUT_TYPES}. */
export type OutputType = (typeof OUTPUT_TYPES)[number];

/** How a run's rows reach the target table (README "Loaded tables"); the first is the default. */
export const WRITE_MODES = ['replace', 'append', 'merge'] as const;
/** One of {@link WRITE_MODES}. */
export type WriteMode = (typeof WRITE_MODES)[number];

/** How a run came to be (`etl.runs.trigger`, `etl.run_requests.trigger`). */
export const RUN_TRIGGERS = ['manual', 'schedule', 'catchup', 'backfill', 'replay'] as const;
/** One of {@link RUN_TRIGGERS}. */
export type RunTrigger = (typeof RUN_TRIGGERS)[number];
/** Triggers whose run stands for one schedule tick: such a run is loaded once per tick (id `<job>__<tick>`). */
export type TickTrigger = Extract<RunTrigger, 'schedule' | 'catchup' | 'backfill'>;
/** The {@link TickTrigger}s, for membership tests. */
export const TICK_TRIGGERS: ReadonlySet<RunTrigger> = new Set<RunTrigger>(['schedule', 'catchup', 'backfill']);

/** Status of one attempt (`etl.runs.status`): `running` until it ends in one of the other three. */
export const ATTEMPT_STATUSES = ['running', 'succeeded', 'failed', 'interrupted'] as const;
/** One of {@link ATTEMPT_STATUSES}. */
export type AttemptStatus = (typeof ATTEMPT_STATUSES)[number];

/** The part of an attempt an error happened in (`etl.run_errors.stage`). */
export const RUN_STAGES = ['config', 'token', 'start', 'poll', 'fetch', 'parse', 'load', 'commit', 'delete'] as const;
/** One of {@link RUN_STAGES}. */
export type RunStage = (typeof RUN_STAGES)[number];

/**
 * What a logical run asks for: the BullMQ job data of a queued run, and the `etl.run_requests` row. Times are
 * ISO 8601 strings (queue job data is JSON).
 */
export interface RunRequest {
  /** jobs.yaml job name. */
  job: string;
  trigger: RunTrigger;
  /** The logical run (`etl.runs.run_key`); every attempt and replay shares it, so append loads stay exactly-once. */
  runKey: string;
  /** The tick this run stands for (scheduled, caught-up, backfilled runs and their replays). */
  scheduledFor?: string;
  /** Start of the interval the run covers: the schedule's previous tick (`%{logicalStart}` in parameters). */
  logicalStart?: string;
  /** End of the interval: the tick, or the time a manual run was asked for (`%{logicalEnd}`). */
  logicalEnd?: string;
  /** Explicit report parameters; they override jobs.yaml's (after its `%{...}` templates are rendered). */
  parameters?: Record<string, string>;
}

/**
 * What an alert target can be told (jobs.yaml `alerts.<name>.events`): `failed` a run failed for good (after its
 * last retry), `recovered` the first success after such a failure, `stale` the job's last success is older than
 * its `freshness`, `login_required` a run failed because a user-dependent service user must log in again.
 */
export const ALERT_EVENTS = ['failed', 'recovered', 'stale', 'login_required'] as const;
/** One of {@link ALERT_EVENTS}. */
export type AlertEvent = (typeof ALERT_EVENTS)[number];

/** Body formats of an alert webhook: a generic JSON document, a Slack or a Microsoft Teams message. */
export const ALERT_FORMATS = ['generic', 'slack', 'teams'] as const;
/** One of {@link ALERT_FORMATS}. */
export type AlertFormat = (typeof ALERT_FORMATS)[number];
