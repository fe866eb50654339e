/**
 * An attempt's timeline, etl.attempts.timeline (docs/observability.md "Tracing"): each step and page as ms offsets from
 * the attempt's start (its slot wait included). Beyond {@link MAX_PAGE_ENTRIES} pages, neighbours merge into groups of
 * 2, 4, 8 … pages, so a timeline stays small (about 15 kB) however many pages a report has.
 */

/** Version of the stored shape; a reader ignores another. */
export const TIMELINE_VERSION = 1;

/** Most page entries a timeline keeps. */
export const MAX_PAGE_ENTRIES = 100;

/** The steps of an attempt in the order they run (docs/architecture.md "Flow of one run"). */
export const TIMELINE_STEPS = [
  'slot',
  'record',
  'check',
  'token',
  'clear',
  'start',
  'render',
  'load',
  'target_delete',
  'copy',
  'apply',
  'commit',
  'delete',
] as const;

/** One of {@link TIMELINE_STEPS}. */
export type TimelineStepName = (typeof TIMELINE_STEPS)[number];

/** One step: it began `at` ms after the attempt's start and took `ms`. */
export interface TimelineStep {
  step: TimelineStepName;
  at: number;
  ms: number;
  failed?: true;
  /** render: status polls made. */
  polls?: number;
  /** render: the server's finishedAt − startedAt, when it said both. */
  serverMs?: number;
}

/**
 * One page, or consecutive pages `page` to `to`. Offsets: `req` requested (one page ahead), `hdr` headers arrived,
 * `start`..`end` body read. Durations: `wait` for the answer before reading, and of the reading `net` for the
 * server's bytes, `copy` for COPY, `decode` the rest. A group sums durations and counts.
 */
export interface TimelinePage {
  page: number;
  to?: number;
  /** 2 for the second pass (a binary COPY started over in text format). */
  pass?: number;
  req: number;
  hdr: number;
  start: number;
  end: number;
  wait: number;
  net: number;
  decode: number;
  copy: number;
  rows: number;
  bytes: number;
  failed?: true;
}

/** The timeline of one attempt (the jsonb document). */
export interface AttemptTimeline {
  v: typeof TIMELINE_VERSION;
  /** The attempt's start, ISO 8601 UTC. */
  start: string;
  ms: number;
  steps: TimelineStep[];
  pages: TimelinePage[];
  /** Pages read in all passes. */
  pagesRead: number;
  /** Pages per entry once merged; absent while each page has its own. */
  pageGroup?: number;
}

/** Rounds ms to 0.1. */
export function roundMs(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/** Merges two consecutive entries into one covering both. */
function mergePages(a: TimelinePage, b: TimelinePage): TimelinePage {
  const merged: TimelinePage = {
    ...a,
    to: b.to ?? b.page,
    end: Math.max(a.end, b.end),
    rows: a.rows + b.rows,
    bytes: a.bytes + b.bytes,
  };
  for (const k of ['wait', 'net', 'decode', 'copy'] as const) merged[k] = roundMs(a[k] + b[k]);
  if ((b.pass ?? 1) > (a.pass ?? 1)) merged.pass = b.pass!;
  if (b.failed) merged.failed = true;
  return merged;
}

/** Page entries as pages are read: at {@link MAX_PAGE_ENTRIES}, neighbours merge pairwise and `group` doubles. */
export class PageEntries {
  readonly entries: TimelinePage[] = [];
  /** Pages per entry. */
  group = 1;
  private readonly counts: number[] = [];

  add(p: TimelinePage): void {
    const n = this.entries.length;
    const last = this.entries[n - 1];
    if (last && this.counts[n - 1]! < this.group && (last.pass ?? 1) === (p.pass ?? 1)) {
      this.entries[n - 1] = mergePages(last, p);
      this.counts[n - 1]! += 1;
      return;
    }
    if (n === MAX_PAGE_ENTRIES) {
      // A last entry left with fewer than `group` pages keeps taking pages until full.
      const entries = this.entries.splice(0);
      const counts = this.counts.splice(0);
      for (let i = 0; i < entries.length; i += 2) {
        const b = entries[i + 1];
        this.entries.push(b ? mergePages(entries[i]!, b) : entries[i]!);
        this.counts.push(counts[i]! + (b ? counts[i + 1]! : 0));
      }
      this.group *= 2;
      this.add(p);
      return;
    }
    this.entries.push(p);
    this.counts.push(1);
  }
}

function isNumber(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

/** Reads a stored timeline: undefined unless of this version with its numbers in place (rows of other releases). */
export function readTimeline(value: unknown): AttemptTimeline | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const t = value as Partial<AttemptTimeline>;
  if (t.v !== TIMELINE_VERSION || typeof t.start !== 'string' || Number.isNaN(Date.parse(t.start)) || !isNumber(t.ms))
    return undefined;
  if (!Array.isArray(t.steps) || !Array.isArray(t.pages)) return undefined;
  const steps = t.steps.filter(
    (s): s is TimelineStep =>
      !!s && (TIMELINE_STEPS as readonly string[]).includes(s.step) && isNumber(s.at) && isNumber(s.ms),
  );
  const pages = t.pages.filter(
    (p): p is TimelinePage =>
      !!p && [p.page, p.req, p.hdr, p.start, p.end, p.wait, p.net, p.decode, p.copy, p.rows, p.bytes].every(isNumber),
  );
  return { ...t, steps, pages, pagesRead: isNumber(t.pagesRead) ? t.pagesRead : pages.length } as AttemptTimeline;
}

/** Where an attempt's time went, in ms, by whom it waited for (see {@link timeSpent}). */
export interface TimeSpent {
  slot: number;
  /** The server's answers: token, start, polls, page answers, DELETE. */
  server: number;
  /** Page bytes arriving. */
  network: number;
  decode: number;
  /** Recording, checking, and the load not spent on pages (DELETE, COPY, write mode, COMMIT). */
  database: number;
  /** The worker's own bookkeeping between steps. */
  other: number;
  total: number;
}

/**
 * Splits an attempt's time by whom it waited for along its path, never counting an overlap twice: a page fetched
 * ahead counts only as long as the attempt waited for it.
 */
export function timeSpent(t: AttemptTimeline): TimeSpent {
  const step = (name: TimelineStepName) => t.steps.filter((s) => s.step === name).reduce((n, s) => n + s.ms, 0);
  const sum = (f: (p: TimelinePage) => number) => t.pages.reduce((n, p) => n + f(p), 0);
  const pageWait = sum((p) => p.wait);
  const network = sum((p) => p.net);
  const decode = sum((p) => p.decode);
  const slot = step('slot');
  const server = step('token') + step('clear') + step('start') + step('render') + step('delete') + pageWait;
  const database = step('record') + step('check') + Math.max(0, step('load') - pageWait - network - decode);
  const other = Math.max(0, t.ms - slot - server - network - decode - database);
  return { slot, server, network, decode, database, other, total: t.ms };
}
