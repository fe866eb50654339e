/**
 * What an attempt asked the server for (etl.attempts.request, migration 0020; docs/observability.md "Run history"):
 * the logical interval it stood for, written with the attempt, and the report request as sent, once rendered.
 */
import type { Queryable } from '../db.ts';

/** The report request of an attempt, as sent to the server's start endpoint (docs/report-export-service.md). */
export interface SentReportRequest {
  mandant: string;
  /** Report name as in jobs.yaml, sub folders separated by "/". */
  name: string;
  outputType: string;
  /** Rows per page. */
  paging: number;
  /** The parameters after their `%{...}` templates were rendered and `-p` applied, name to value. */
  parameters: Record<string, string>;
}

/**
 * etl.attempts.request as read: times ISO 8601 UTC; `report` missing when the attempt failed before it was rendered.
 * (Stored, `report.parameters` is a list of `[name, value]` pairs.)
 */
export interface AttemptRequest {
  /** The interval `(logicalStart, logicalEnd]` the run stands for, and its tick. */
  logicalStart: string;
  logicalEnd: string;
  tick: string;
  /**
   * The report request: as sent, or for an attempt with `pagesFrom` the one its kept pages came from (it sent none).
   */
  report?: SentReportRequest;
  /** The attempt whose kept pages this one loaded, asking the server nothing (`replay --from-pages`). */
  pagesFrom?: string;
  /** With target.replaceRange: the period the attempt replaces, its bounds rendered (`from` inclusive, `to` not). */
  replaceRange?: { column: string; from: string; to: string };
}

/**
 * Stores the report request as sent on the (recorded) attempt, next to its interval. The parameters are kept as
 * `[name, value]` pairs: jsonb would reorder an object's keys, and they read best in jobs.yaml's order.
 */
export async function setAttemptReportRequest(
  db: Queryable,
  attemptId: string,
  report: SentReportRequest,
): Promise<void> {
  await db.query(
    `UPDATE etl.attempts SET request = coalesce(request, '{}'::jsonb) || jsonb_build_object('report', $2::jsonb)
      WHERE attempt_id = $1`,
    [attemptId, JSON.stringify({ ...report, parameters: Object.entries(report.parameters) })],
  );
}

/**
 * Records on an attempt that loads the kept pages of attempt `from` (docs/operations.md "Kept pages") that it sends
 * nothing: `pagesFrom` and, as its `report`, the request of `from` that made those pages (none when `from` kept none).
 */
export async function setAttemptRequestFromPages(db: Queryable, attemptId: string, from: string): Promise<void> {
  await db.query(
    `UPDATE etl.attempts SET request = (coalesce(request, '{}'::jsonb) - 'report')
        || jsonb_build_object('pagesFrom', $2::text)
        || coalesce((SELECT jsonb_build_object('report', o.request -> 'report') FROM etl.attempts o
                      WHERE o.attempt_id::text = $2::text AND o.request ? 'report'), '{}'::jsonb)
      WHERE attempt_id = $1`,
    [attemptId, from],
  );
}

/** etl.attempts.request read back, or undefined when missing or not of this shape (an older attempt). */
export function readAttemptRequest(value: unknown): AttemptRequest | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v.logicalStart !== 'string' || typeof v.logicalEnd !== 'string') return undefined;
  const r = v.report as Record<string, unknown> | undefined;
  const report =
    r && typeof r === 'object' && typeof r.name === 'string'
      ? {
          mandant: String(r.mandant),
          name: r.name,
          outputType: String(r.outputType),
          paging: Number(r.paging),
          parameters: Object.fromEntries(
            (Array.isArray(r.parameters)
              ? (r.parameters as unknown[]).filter((p): p is unknown[] => Array.isArray(p) && p.length === 2)
              : Object.entries((r.parameters as Record<string, unknown> | null) ?? {})
            ).map(([k, x]) => [String(k), String(x)]),
          ),
        }
      : undefined;
  return {
    logicalStart: v.logicalStart,
    logicalEnd: v.logicalEnd,
    tick: typeof v.tick === 'string' ? v.tick : v.logicalEnd,
    ...(report ? { report } : {}),
    ...(typeof v.pagesFrom === 'string' ? { pagesFrom: v.pagesFrom } : {}),
    ...rangeOf(v.replaceRange),
  };
}

/** `{ replaceRange }` of a stored request's period, or nothing when missing or not of this shape. */
function rangeOf(value: unknown): Pick<AttemptRequest, 'replaceRange'> {
  const r = value as Record<string, unknown> | null | undefined;
  if (!r || typeof r !== 'object' || typeof r.column !== 'string') return {};
  if (typeof r.from !== 'string' || typeof r.to !== 'string') return {};
  return { replaceRange: { column: r.column, from: r.from, to: r.to } };
}

/** A report request on one line, as `runs --attempts` prints it: `7777 Sales/Orders txt/500 FROM=2026-11-24`. */
export function reportRequestText(r: SentReportRequest): string {
  const params = Object.entries(r.parameters).map(([k, v]) => `${k}=${v}`);
  return [`${r.mandant} ${r.name} ${r.outputType}/${r.paging}`, ...params].join(' ');
}

/**
 * What an attempt that loaded kept pages sent (docs/operations.md "Kept pages"): `sent nothing: loaded the kept pages
 * of attempt <id> (which sent 7777 Sales/Orders txt/500 …)`.
 * @param report the request the pages came from, when recorded
 */
export function keptPagesText(pagesFrom: string, report: SentReportRequest | undefined): string {
  const which = report ? `which sent ${reportRequestText(report)}` : 'whose request was not recorded';
  return `sent nothing: loaded the kept pages of attempt ${pagesFrom} (${which})`;
}

/**
 * An attempt's request as lines of text for a terminal or an alert: the interval (each end by `format`), the report
 * and its parameters as sent: `interval: (…, …]`, `report: mandant 7777, Sales/Orders, txt, paging 500`,
 * `parameters: FROM=2026-11-24, TO=2026-11-25`, and with target.replaceRange the period it replaces: `period
 * replaced: buchungstag in [2026-11-17, 2026-11-24)`.
 */
export function requestLines(r: AttemptRequest, format: (t: Date) => string): string[] {
  const start = new Date(r.logicalStart);
  const end = new Date(r.logicalEnd);
  const lines = [
    start.getTime() === end.getTime()
      ? `logical time: ${format(end)} (no interval)`
      : `interval: (${format(start)}, ${format(end)}]`,
  ];
  if (r.pagesFrom) {
    lines.push(keptPagesText(r.pagesFrom, r.report));
    return lines;
  }
  if (!r.report) {
    lines.push('report: not sent (the attempt failed before its parameters were rendered)');
    return lines;
  }
  const { mandant, name, outputType, paging, parameters } = r.report;
  lines.push(`report: mandant ${mandant}, ${name}, ${outputType}, paging ${paging}`);
  const params = Object.entries(parameters).map(([k, x]) => `${k}=${x}`);
  lines.push(`parameters: ${params.length ? params.join(', ') : '(none)'}`);
  const range = r.replaceRange;
  if (range) lines.push(`period replaced: ${range.column} in [${range.from}, ${range.to})`);
  return lines;
}
