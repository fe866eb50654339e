/**
 * The words every part of report-etl shares (docs/architecture.md "Layers"): output types, write modes, how a run came to
 * be, the status of an attempt, the stage an error happened in, and what a queued run asks for. Each list is
 * defined once here; the jobs.yaml schema, the run history, the queue and the admin pages derive from it.
 *
 * Terms: a **run** is the logical run (one tick of a schedule, one manual request; its `run key`, one `etl.runs`
 * row), an **attempt** is one try of it (one `etl.attempts` row, `attempt_id`). "Job" alone is ambiguous: a
 * **jobs.yaml job** is an entry under `jobs:`, a **queue job** is a BullMQ job, a **report job** is the server's job
 * (docs/report-export-service.md "Job (report session)").
 */

/**
 * Output types of the service, every one of which report-etl loads (docs/report-export-service.md "Output types", the whole table, in its
 * order). The first is the default of `report.outputType`. What each one loads as: {@link outputShape}.
 */
export const OUTPUT_TYPES = [
  'json',
  'json_compact',
  'txt',
  'xml_query',
  'txt_all',
  'txt_cstr',
  'txt_allcstr',
  'xml',
  'json_userdef',
  'json_userdef_compact',
  'pdf',
  'excel-xlsx_data',
  'excel-xlsx_matrix',
  'excel-xlsx',
  'word-docx',
] as const;
/** One of {@link OUTPUT_TYPES}. */
export type OutputType = (typeof OUTPUT_TYPES)[number];

/**
 * The output types whose decoders can write COPY binary format (docs/loaded-tables.md "COPY format": typed columns of
 * 10,000 rows and more), in the order of {@link OUTPUT_TYPES}; the others load in text format. test/copy-binary.test.ts
 * checks this against the decoders.
 */
export const BINARY_COPY_OUTPUT_TYPES: readonly OutputType[] = ['json', 'json_compact', 'txt', 'xml_query'];

/** The binary document types (docs/report-export-service.md "Output types": pdf, excel, word): archived one file per page. */
export const DOCUMENT_OUTPUT_TYPES = [
  'pdf',
  'excel-xlsx_data',
  'excel-xlsx_matrix',
  'excel-xlsx',
  'word-docx',
] as const;
/** One of {@link DOCUMENT_OUTPUT_TYPES}. */
export type DocumentOutputType = (typeof DOCUMENT_OUTPUT_TYPES)[number];

/** Whether `t` is a binary document type ({@link DOCUMENT_OUTPUT_TYPES}). */
export function isDocumentType(t: OutputType): t is DocumentOutputType {
  return (DOCUMENT_OUTPUT_TYPES as readonly string[]).includes(t);
}

/**
 * The first product version of the server that supports an output type (docs/report-export-service.md "Versioning" 2 and the "Output types"
 * table); types not listed work with every version.
 */
export const MIN_PRODUCT_VERSION: Partial<Record<OutputType, number>> = {
  pdf: 2025,
  'excel-xlsx_data': 2026,
  'excel-xlsx_matrix': 2026,
  'excel-xlsx': 2026,
  'word-docx': 2026,
};

/** How a document type's page is archived: the file extension and the Content-Type the server must send. */
export const DOCUMENT_FORMATS: Record<DocumentOutputType, { extension: string; contentType: string }> = {
  pdf: { extension: 'pdf', contentType: 'application/pdf' },
  'excel-xlsx_data': {
    extension: 'xlsx',
    contentType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  },
  'excel-xlsx_matrix': {
    extension: 'xlsx',
    contentType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  },
  'excel-xlsx': { extension: 'xlsx', contentType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' },
  'word-docx': {
    extension: 'docx',
    contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  },
};

/**
 * What a run's pages load as (docs/loaded-tables.md "Output types"):
 * - `rows`: typed rows, one per report row (json, json_compact, txt, txt_cstr, xml_query; json_userdef with
 *   `target.rowsAt`; excel-xlsx_data with `target.load: rows`); the server's rows= must match;
 * - `lines`: one row per line `page, line, fields text[]` (txt_all, txt_allcstr);
 * - `json-document`: one row per page `page, document jsonb` (json_userdef without rowsAt);
 * - `xml-document`: one row per page `page, document xml` (xml);
 * - `file`: one row per page `page, file_name, content_type, bytes, sha256, content bytea` (documents).
 * Every shape but `rows` checks the page count instead of rows=.
 */
export type OutputShape = 'rows' | 'lines' | 'json-document' | 'xml-document' | 'file';

/** The {@link OutputShape} of a job's output type, given its `target.rowsAt` and `target.load`. */
export function outputShape(
  t: OutputType,
  target: { rowsAt?: string | undefined; load?: 'document' | 'rows' | undefined } = {},
): OutputShape {
  switch (t) {
    case 'txt_all':
    case 'txt_allcstr':
      return 'lines';
    case 'json_userdef':
    case 'json_userdef_compact':
      return target.rowsAt === undefined ? 'json-document' : 'rows';
    case 'xml':
      return 'xml-document';
    case 'excel-xlsx_data':
      return target.load === 'rows' ? 'rows' : 'file';
    default:
      return isDocumentType(t) ? 'file' : 'rows';
  }
}

/** How a run's rows reach the target table (docs/loaded-tables.md "Write modes"); the first is the default. */
export const WRITE_MODES = ['replace', 'append', 'merge'] as const;
/** One of {@link WRITE_MODES}. */
export type WriteMode = (typeof WRITE_MODES)[number];

/**
 * What a run does when the report's columns differ from the existing target's (docs/loaded-tables.md "Guards and schema
 * changes"): evolve adds the new ones, freeze fails the run listing the difference. The first is the default.
 */
export const SCHEMA_CHANGES = ['evolve', 'freeze'] as const;
/** One of {@link SCHEMA_CHANGES}. */
export type SchemaChanges = (typeof SCHEMA_CHANGES)[number];

/** How a run came to be (`etl.runs.trigger`), or an attempt of it (`etl.attempts.trigger`: a replay's are `replay`). */
export const RUN_TRIGGERS = ['manual', 'schedule', 'catchup', 'backfill', 'replay'] as const;
/** One of {@link RUN_TRIGGERS}. */
export type RunTrigger = (typeof RUN_TRIGGERS)[number];
/** Triggers whose run stands for one schedule tick: such a run is loaded once per tick (id `<job>__<tick>`). */
export type TickTrigger = Extract<RunTrigger, 'schedule' | 'catchup' | 'backfill'>;
/** The {@link TickTrigger}s, for membership tests. */
export const TICK_TRIGGERS: ReadonlySet<RunTrigger> = new Set<RunTrigger>(['schedule', 'catchup', 'backfill']);

/**
 * Status of one attempt (`etl.attempts.status`): `running` until it ends in one of the other three. A run's status
 * (`etl.runs.status`) is its newest attempt's.
 */
export const ATTEMPT_STATUSES = ['running', 'succeeded', 'failed', 'interrupted'] as const;
/** One of {@link ATTEMPT_STATUSES}. */
export type AttemptStatus = (typeof ATTEMPT_STATUSES)[number];

/** The part of an attempt an error happened in (`etl.run_errors.stage`). */
export const RUN_STAGES = ['config', 'token', 'start', 'poll', 'fetch', 'parse', 'load', 'commit', 'delete'] as const;
/** One of {@link RUN_STAGES}. */
export type RunStage = (typeof RUN_STAGES)[number];

/**
 * What a logical run asks for: the BullMQ job data of a queued run, kept in its `etl.runs` row. Times are ISO 8601
 * strings (queue job data is JSON).
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
  /**
   * Load past the target's guards (`replay --accept-guard`, docs/loaded-tables.md "Guards and schema changes"): a guard
   * that would trip is logged and recorded on the attempt (`etl.attempts.accepted_guard`) instead of failing the run.
   */
  acceptGuard?: boolean;
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
