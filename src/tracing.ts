/**
 * Traces through the OpenTelemetry API alone (docs/architecture.md "Observability"): span and attribute names, and
 * W3C trace context in and out of a queued run's data. Until app/tracing-sdk.ts registers an SDK, the tracer is the
 * no-op one and every helper here returns "no trace".
 */
import {
  context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';

/** Attribute names under `report_etl.` (OpenTelemetry's own `error.type`); durations in ms, sizes in bytes. */
export const ATTR = {
  job: 'report_etl.job',
  runKey: 'report_etl.run_key',
  attemptId: 'report_etl.attempt_id',
  /** 1-based number of the attempt within its run. */
  attempt: 'report_etl.attempt',
  trigger: 'report_etl.trigger',
  outputType: 'report_etl.output_type',
  report: 'report_etl.report',
  connection: 'report_etl.connection',
  targetTable: 'report_etl.target_table',
  writeMode: 'report_etl.write_mode',
  reportJobId: 'report_etl.report_job_id',
  /** BullMQ job id of a queued run; whether an enqueue added it (false: queued already); takes before this one. */
  queueJobId: 'report_etl.queue_job_id',
  queueAdded: 'report_etl.queue.added',
  queueAttemptsMade: 'report_etl.queue.attempts_made',
  /** The tick a scheduled run stands for (ISO 8601). */
  tick: 'report_etl.tick',
  /** Of an attempt or of one page; bytes of page bodies as downloaded. */
  rows: 'report_etl.rows',
  pages: 'report_etl.pages',
  bytes: 'report_etl.bytes',
  /** 1-based page number; the pass over the pages (2 after a binary COPY started over in text format). */
  page: 'report_etl.page',
  pass: 'report_etl.pass',
  /** Of one page's reading: waiting for the server's bytes, decoding them, waiting for COPY. */
  networkMs: 'report_etl.page.network_ms',
  decodeMs: 'report_etl.page.decode_ms',
  copyMs: 'report_etl.page.copy_ms',
  /** Status polls of the report job, and the server's own rendering time (its finishedAt − startedAt). */
  polls: 'report_etl.polls',
  serverRenderMs: 'report_etl.server_render_ms',
  /** succeeded, already-loaded, failed, interrupted. */
  status: 'report_etl.status',
  loadPlan: 'report_etl.load.plan',
  copyFormat: 'report_etl.load.format',
  stage: 'report_etl.stage',
  /** A failure's stable error kind (`etl.run_errors.error_kind`). */
  errorType: 'error.type',
  retryable: 'report_etl.retryable',
} as const;

/** The W3C trace context of a span, as it travels in a queued run's data (`traceparent`, `tracestate` headers). */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
}

/** The tracer of report-etl's spans: the SDK's once one is registered, the API's no-op one until then. */
export function runTracer(): Tracer {
  return trace.getTracer('report-etl');
}

/** The trace context of `span` for a queued run's data; empty when nothing is traced (no SDK, or not sampled). */
export function injectTrace(span: Span): TraceCarrier {
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(context.active(), span), carrier);
  const out: TraceCarrier = {};
  if (carrier.traceparent) out.traceparent = carrier.traceparent;
  if (carrier.tracestate) out.tracestate = carrier.tracestate;
  return out;
}

/** The context a queued run's spans continue: the one in `carrier` (its enqueue's), else the active one. */
export function extractTrace(carrier: TraceCarrier | undefined): Context {
  if (!carrier?.traceparent) return context.active();
  return propagation.extract(ROOT_CONTEXT, carrier);
}

/** The trace id of `span` when it is traced and sampled, else undefined. */
export function traceIdOf(span: Span): string | undefined {
  const sc = span.spanContext();
  return isSpanContextValid(sc) && (sc.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED ? sc.traceId : undefined;
}

/** Starts a span as a child of `parent` (a span, or a context), at `o.startTime` (epoch ms; default now). */
export function startSpan(
  tracer: Tracer,
  name: string,
  parent: Span | Context,
  o: { startTime?: number; attributes?: Attributes; kind?: SpanKind } = {},
): Span {
  return tracer.startSpan(name, o, 'spanContext' in parent ? trace.setSpan(ROOT_CONTEXT, parent) : parent);
}

/** Runs `fn` in a new active span `name`, a child of the active one, ended when `fn` settles (failed on a throw). */
export async function inSpan<T>(
  name: string,
  o: { attributes?: Attributes; kind?: SpanKind },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return runTracer().startActiveSpan(name, o, async (span) => {
    try {
      const result = await fn(span);
      span.end();
      return result;
    } catch (err) {
      failSpan(span, err);
      throw err;
    }
  });
}

/** The active context with `span` as its span. */
export function contextWith(span: Span): Context {
  return trace.setSpan(context.active(), span);
}

/** Epoch ms of a `performance.now()` reading: the time span start and end times take. */
export function epochMs(perfNow: number): number {
  return performance.timeOrigin + perfNow;
}

/** Ends `span` as failed: status ERROR with the error's message, its code in `error.type`, the exception event. */
export function failSpan(span: Span, err: unknown, attributes: Attributes = {}, endTime?: number): void {
  if (span.isRecording()) {
    const e = err instanceof Error ? err : new Error(String(err));
    span.recordException(e);
    span.setAttributes({ [ATTR.errorType]: String((e as { code?: unknown }).code ?? e.name), ...attributes });
    span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
  }
  span.end(endTime);
}

export { SpanKind };
export type { Attributes, Context, Span, Tracer };
