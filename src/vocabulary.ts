/**
 * The words every part of report-etl shares (docs/architecture.md "Vocabulary"): output types, write modes,
 * triggers, attempt statuses, stages, what a queued run asks for. Each list is defined once here; the jobs.yaml
 * schema, the run history, the queue and the admin pages derive from it.
 */

/** The binary document types (pdf, excel, word): archived one file per page. */
export const DOCUMENT_OUTPUT_TYPES = [
  'pdf',
  'excel-xlsx_data',
  'excel-xlsx_matrix',
  'excel-xlsx',
  'word-docx',
] as const;
/** One of {@link DOCUMENT_OUTPUT_TYPES}. */
export type DocumentOutputType = (typeof DOCUMENT_OUTPUT_TYPES)[number];

/**
 * The service's output types (docs/report-export-service.md "Output types", in its order), every one loaded; the
 * first is the default of `report.outputType`.
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
  ...DOCUMENT_OUTPUT_TYPES,
] as const;
/** One of {@link OUTPUT_TYPES}. */
export type OutputType = (typeof OUTPUT_TYPES)[number];

/** The output types whose decoders write COPY binary format (test/copy-binary.test.ts checks the decoders). */
export const BINARY_COPY_OUTPUT_TYPES: readonly OutputType[] = ['json', 'json_compact', 'txt', 'xml_query'];

/** Whether `t` is a binary document type. */
export function isDocumentType(t: OutputType): t is DocumentOutputType {
  return (DOCUMENT_OUTPUT_TYPES as readonly string[]).includes(t);
}

/** The first product version of the server with an output type (docs/report-export-service.md "Versioning"). */
export const MIN_PRODUCT_VERSION: Partial<Record<OutputType, number>> = {
  pdf: 2025,
  'excel-xlsx_data': 2026,
  'excel-xlsx_matrix': 2026,
  'excel-xlsx': 2026,
  'word-docx': 2026,
};

const XLSX = { extension: 'xlsx', contentType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' };

/** How a document type's page is archived: the file extension and the Content-Type the server must send. */
export const DOCUMENT_FORMATS: Record<DocumentOutputType, { extension: string; contentType: string }> = {
  pdf: { extension: 'pdf', contentType: 'application/pdf' },
  'excel-xlsx_data': XLSX,
  'excel-xlsx_matrix': XLSX,
  'excel-xlsx': XLSX,
  'word-docx': {
    extension: 'docx',
    contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  },
};

/**
 * What a run's pages load as (docs/loaded-tables.md "Output types"): `rows`, typed rows checked against the server's
 * rows=; `lines` (`page, line, fields text[]`); `json-document`, `xml-document` (`page, document`); `file` (`page,
 * file_name, content_type, bytes, sha256, content`). Every shape but `rows` checks the page count instead.
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
 * What a run does when the report's columns differ from the target's (docs/loaded-tables.md "Guards and schema
 * changes"): evolve adds the new ones, freeze fails the run. The first is the default.
 */
export const SCHEMA_CHANGES = ['evolve', 'freeze'] as const;
/** One of {@link SCHEMA_CHANGES}. */
export type SchemaChanges = (typeof SCHEMA_CHANGES)[number];

/** How a run came to be (`etl.runs.trigger`), or an attempt of it (a replay's attempts are `replay`). */
export type RunTrigger = 'manual' | 'schedule' | 'catchup' | 'backfill' | 'replay';
/** Triggers whose run stands for one schedule tick, loaded once per tick (run key `<job>__<tick>`). */
export type TickTrigger = Extract<RunTrigger, 'schedule' | 'catchup' | 'backfill'>;
/** The {@link TickTrigger}s, for membership tests. */
export const TICK_TRIGGERS: ReadonlySet<RunTrigger> = new Set<RunTrigger>(['schedule', 'catchup', 'backfill']);

/** Status of one attempt (`etl.attempts.status`; a run's is its newest attempt's). */
export const ATTEMPT_STATUSES = ['running', 'succeeded', 'failed', 'interrupted'] as const;
/** One of {@link ATTEMPT_STATUSES}. */
export type AttemptStatus = (typeof ATTEMPT_STATUSES)[number];

/** The part of an attempt an error happened in (`etl.run_errors.stage`). */
export type RunStage = 'config' | 'token' | 'start' | 'poll' | 'fetch' | 'parse' | 'load' | 'commit' | 'delete';

/** What a logical run asks for: the BullMQ job data of a queued run, kept in its `etl.runs` row; times ISO 8601. */
export interface RunRequest {
  /** jobs.yaml job name. */
  job: string;
  trigger: RunTrigger;
  /** Shared by every attempt and replay of the run, so append loads stay exactly-once. */
  runKey: string;
  /** The tick this run stands for (scheduled, caught-up, backfilled runs and their replays). */
  scheduledFor?: string;
  /** The interval the run covers (`%{logicalStart}`, `%{logicalEnd}`): the previous tick to the tick or request. */
  logicalStart?: string;
  logicalEnd?: string;
  /** Explicit report parameters; they override jobs.yaml's. */
  parameters?: Record<string, string>;
  /** `replay --accept-guard`: a guard that would trip is recorded on the attempt instead of failing the run. */
  acceptGuard?: boolean;
  /**
   * `replay --from-pages`: the attempt whose kept pages to load instead of asking the server (docs/operations.md
   * "Kept pages").
   */
  pagesOf?: string;
}

/**
 * What an alert target can be told (jobs.yaml `alerts.<name>.events`): a run failed for good (after its last retry),
 * the first success after that, a breached freshness, a run that needs `report-etl login`.
 */
export const ALERT_EVENTS = ['failed', 'recovered', 'stale', 'login_required'] as const;
/** One of {@link ALERT_EVENTS}. */
export type AlertEvent = (typeof ALERT_EVENTS)[number];

/** Body formats of an alert webhook: a generic JSON document, a Slack or a Microsoft Teams message. */
export const ALERT_FORMATS = ['generic', 'slack', 'teams'] as const;
/** One of {@link ALERT_FORMATS}. */
export type AlertFormat = (typeof ALERT_FORMATS)[number];
