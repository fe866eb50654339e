/**
 * Where one attempt's time goes (docs/observability.md "Tracing", docs/architecture.md "Observability"): each step and
 * each page is timed once, with `performance.now()`, and the same figures make both the attempt's timeline
 * (history/timeline.ts, stored with the attempt whether or not traces are exported) and its spans (one span for the
 * attempt, a child per step, and per page a span with its fetch and its reading). When nothing is traced the attempt's
 * span is the API's no-op one and no other span is made: what is left is the timeline's few numbers per step and page.
 */
import {
  PageEntries,
  roundMs,
  TIMELINE_VERSION,
  type AttemptTimeline,
  type TimelinePage,
  type TimelineStep,
  type TimelineStepName,
} from '../history/timeline.ts';
import {
  ATTR,
  epochMs,
  failSpan,
  runTracer,
  startSpan,
  traceIdOf,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from '../tracing.ts';
import type { RunStage } from '../vocabulary.ts';
import type { PageTiming, PageTimings } from './report-rows.ts';

/** The span name of each step (docs/observability.md "Tracing" lists them). */
const STEP_SPAN_NAMES: Readonly<Record<TimelineStepName, string>> = {
  slot: 'wait for report slot',
  record: 'record attempt',
  check: 'check attempt',
  token: 'access token',
  clear: 'clear dead attempts',
  start: 'start report job',
  render: 'render report',
  load: 'load',
  target_delete: 'delete target rows',
  copy: 'copy',
  apply: 'apply write mode',
  commit: 'commit',
  delete: 'delete report job',
};

/** The stage a failure in each step is recorded at, unless the error names its own; steps not named keep the last. */
const STEP_STAGES: Partial<Record<TimelineStepName, RunStage>> = {
  check: 'config',
  token: 'token',
  clear: 'start',
  start: 'start',
  render: 'poll',
  load: 'load',
  commit: 'commit',
};

/** The steps that run inside the load transaction: their spans are children of the load's. */
const IN_LOAD: ReadonlySet<TimelineStepName> = new Set(['target_delete', 'copy', 'apply', 'commit']);

/** What a step may add when it ends: render's polls and the server's own rendering time. */
export interface StepEnd {
  polls?: number | undefined;
  serverMs?: number | undefined;
}

/** One attempt's timeline and spans, and the stage it is at; see the module doc. */
export class AttemptTrace {
  /** The attempt's span (the API's no-op span when nothing is traced). */
  readonly span: Span;
  /** The trace id when the attempt's spans are exported (sampled), else undefined. */
  readonly traceId: string | undefined;
  private readonly tracer: Tracer;
  private readonly recording: boolean;
  private readonly t0 = performance.now();
  private readonly wall = Date.now();
  private readonly steps: TimelineStep[] = [];
  private readonly pageEntries = new PageEntries();
  private pagesRead = 0;
  private loadSpan: Span | undefined;
  private endedMs: number | undefined;
  private current: RunStage = 'config';

  /**
   * Starts the attempt's span as a child of `parent` (a queued run's span, from its data), else of the active context.
   * @param attributes what is known before the attempt is recorded (job, run key, trigger, output type, target)
   */
  constructor(parent: Context, attributes: Attributes) {
    this.tracer = runTracer();
    this.span = startSpan(this.tracer, 'attempt', parent, { startTime: epochMs(this.t0), attributes });
    this.recording = this.span.isRecording();
    this.traceId = traceIdOf(this.span);
  }

  /** Where a failure now is recorded (docs/architecture.md "Vocabulary": stage): the last step begun sets it. */
  get stage(): RunStage {
    return this.current;
  }

  /** Sets attributes on the attempt's span (what becomes known as it goes: attempt id, report job id, figures). */
  setAttributes(attributes: Attributes): void {
    if (this.recording) this.span.setAttributes(attributes);
  }

  /**
   * Runs `fn` as step `name`: sets the stage, times it, and makes its span.
   * @param describe what the step adds from its result (render: its polls)
   */
  async step<T>(name: TimelineStepName, fn: () => Promise<T>, describe?: (result: T) => StepEnd): Promise<T> {
    this.current = STEP_STAGES[name] ?? this.current;
    const started = performance.now();
    const parent = IN_LOAD.has(name) && this.loadSpan ? this.loadSpan : this.span;
    const span = this.recording
      ? startSpan(this.tracer, STEP_SPAN_NAMES[name], parent, { startTime: epochMs(started) })
      : undefined;
    if (name === 'load') this.loadSpan = span;
    const record = (extra: StepEnd | undefined, failed: boolean): number => {
      const now = performance.now();
      const step: TimelineStep = { step: name, at: roundMs(started - this.t0), ms: roundMs(now - started) };
      if (failed) step.failed = true;
      if (extra?.polls !== undefined) step.polls = extra.polls;
      if (extra?.serverMs !== undefined) step.serverMs = roundMs(extra.serverMs);
      this.steps.push(step);
      return now;
    };
    try {
      const result = await fn();
      const extra = describe?.(result);
      const now = record(extra, false);
      if (extra?.polls !== undefined) span?.setAttribute(ATTR.polls, extra.polls);
      if (extra?.serverMs !== undefined) span?.setAttribute(ATTR.serverRenderMs, roundMs(extra.serverMs));
      span?.end(epochMs(now));
      return result;
    } catch (err) {
      const now = record(undefined, true);
      if (span) failSpan(span, err, {}, epochMs(now));
      throw err;
    }
  }

  /** Where report-rows.ts reports each page read (or failed while read). */
  readonly pages: PageTimings = { page: (p: PageTiming) => this.page(p) };

  private page(p: PageTiming): void {
    this.pagesRead += 1;
    const at = (t: number) => roundMs(t - this.t0);
    const entry: TimelinePage = {
      page: p.page,
      req: at(p.requestedAt),
      hdr: at(p.answeredAt),
      start: at(p.readFrom),
      end: at(p.readUntil),
      wait: roundMs(p.waitMs),
      net: roundMs(p.networkMs),
      decode: roundMs(Math.max(0, p.readUntil - p.readFrom - p.networkMs - p.copyMs)),
      copy: roundMs(p.copyMs),
      rows: p.rows,
      bytes: p.bytes,
    };
    if (p.pass > 1) entry.pass = p.pass;
    if (p.failed) entry.failed = true;
    this.pageEntries.add(entry);
    if (!this.recording) return;
    const parent = this.loadSpan ?? this.span;
    const figures = {
      [ATTR.page]: p.page,
      [ATTR.rows]: p.rows,
      [ATTR.bytes]: p.bytes,
      ...(p.pass > 1 ? { [ATTR.pass]: p.pass } : {}),
    };
    const pageSpan = startSpan(this.tracer, 'page', parent, { startTime: epochMs(p.requestedAt), attributes: figures });
    startSpan(this.tracer, 'fetch page', pageSpan, {
      startTime: epochMs(p.requestedAt),
      attributes: { [ATTR.page]: p.page },
    }).end(epochMs(p.answeredAt));
    const read = startSpan(this.tracer, 'read page', pageSpan, {
      startTime: epochMs(p.readFrom),
      attributes: {
        [ATTR.page]: p.page,
        [ATTR.networkMs]: entry.net,
        [ATTR.decodeMs]: entry.decode,
        [ATTR.copyMs]: entry.copy,
      },
    });
    for (const span of [read, pageSpan])
      if (p.failed) failSpan(span, p.failed, {}, epochMs(p.readUntil));
      else span.end(epochMs(p.readUntil));
  }

  /** The timeline so far (its end is now, unless {@link end} or {@link fail} ended it), for the run history. */
  timeline(): AttemptTimeline {
    const t: AttemptTimeline = {
      v: TIMELINE_VERSION,
      start: new Date(this.wall).toISOString(),
      ms: roundMs((this.endedMs ?? performance.now()) - this.t0),
      steps: [...this.steps].sort((a, b) => a.at - b.at),
      pages: [...this.pageEntries.entries],
      pagesRead: this.pagesRead,
    };
    if (this.pageEntries.group > 1) t.pageGroup = this.pageEntries.group;
    return t;
  }

  /** Ends the attempt's span as it succeeded, with its figures. */
  end(attributes: Attributes): void {
    this.endedMs ??= performance.now();
    if (!this.recording) return;
    this.span.setAttributes(attributes);
    this.span.end(epochMs(this.endedMs));
  }

  /** Ends the attempt's span as failed. */
  fail(err: unknown, attributes: Attributes = {}): void {
    this.endedMs ??= performance.now();
    if (!this.recording) return;
    failSpan(this.span, err, attributes, epochMs(this.endedMs));
  }
}
