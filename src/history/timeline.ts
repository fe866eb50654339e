/**
 * An attempt's timeline as `etl.attempts.timeline` keeps it (jsonb, migrations/0011): when each step of the attempt
 * ran and how long it took, and each page's request, download, decoding and COPY, as offsets in ms from the
 * attempt's start (its wait for a report slot included). The pipeline records it whether or not traces are exported
 * (the spans are made from the same figures, README "Tracing"); the run and attempt pages draw it. Bounded: beyond
 * {@link MAX_PAGE_ENTRIES} pages, consecutive pages are merged into groups of 2, 4, 8 … pages, so a report of
 * thousands of pages keeps a timeline of at most that many entries (about 15 kB).
 */

/** Version of the stored shape; a reader ignores a timeline of another version. */
export const TIMELINE_VERSION = 1;

/** Most page entries a timeline keeps (see the module doc). */
export const MAX_PAGE_ENTRIES = 100;

/**
 * The steps of an attempt, in the order they run (docs/architecture.md "Flow of one run"): waiting for a report slot,
 * recording the attempt, checking it may run, the report client (discovery, access token), clearing dead attempts,
 * the start request, the server's rendering (the polls), the load transaction and inside it the DELETE of a replaced
 * target's rows, COPY, applying the write mode from a staging table and the commit; the DELETE of the report job.
 */
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
  /** The attempt failed in this step. */
  failed?: true;
  /** render: status polls made. */
  polls?: number;
  /** render: the server's own rendering time (its finishedAt − startedAt), when it said both. */
  serverMs?: number;
}

/**
 * One page, or a group of consecutive pages (`page` to `to`). Times are ms after the attempt's start: `req` the page
 * was requested (one page ahead: while the page before it was read), `hdr` its answer's headers arrived, `start` and
 * `end` its body was read (decoded and handed to COPY). Of that reading, `net` ms waited for the server's bytes,
 * `copy` ms for COPY (PostgreSQL taking the rows), `decode` ms the rest (decoding here); `wait` ms the attempt waited
 * for the page's answer before reading it. A group sums the durations and counts, and spans its first page's `req`
 * to its last page's `end`.
 */
export interface TimelinePage {
  page: number;
  /** Last page of a group; absent for a single page. */
  to?: number;
  /** 2 for the second pass over the pages (a binary COPY that started over in text format); absent for the first. */
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
  /** The attempt failed while reading this page. */
  failed?: true;
}

/** The timeline of one attempt (the jsonb document). */
export interface AttemptTimeline {
  v: typeof TIMELINE_VERSION;
  /** Wall clock of the attempt's start (before its slot wait), ISO 8601 UTC. */
  start: string;
  /** ms from the start to the attempt's end. */
  ms: number;
  steps: TimelineStep[];
  pages: TimelinePage[];
  /** Pages read in all (every pass), however many entries `pages` has. */
  pagesRead: number;
  /** Pages per entry once merged (2, 4, 8 …); absent while every page has its own entry. */
  pageGroup?: number;
}

/** Rounds ms to 0.1 (what the page and the spans show). */
export function roundMs(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/** Merges two consecutive entries into one covering both. */
function mergePages(a: TimelinePage, b: TimelinePage): TimelinePage {
  const merged: TimelinePage = {
    page: a.page,
    to: b.to ?? b.page,
    req: a.req,
    hdr: a.hdr,
    start: a.start,
    end: Math.max(a.end, b.end),
    wait: roundMs(a.wait + b.wait),
    net: roundMs(a.net + b.net),
    decode: roundMs(a.decode + b.decode),
    copy: roundMs(a.copy + b.copy),
    rows: a.rows + b.rows,
    bytes: a.bytes + b.bytes,
  };
  const pass = Math.max(a.pass ?? 1, b.pass ?? 1);
  if (pass > 1) merged.pass = pass;
  if (a.failed || b.failed) merged.failed = true;
  return merged;
}

/**
 * The page entries of a timeline as pages are read: each page is added to the last entry until it holds `group`
 * pages; when there would be more than `max` entries, neighbours are merged pairwise and `group` doubles.
 */
export class PageEntries {
  readonly entries: TimelinePage[] = [];
  /** Pages per entry. */
  group = 1;
  /** Pages in each entry. */
  private readonly counts: number[] = [];
  private readonly max: number;

  constructor(max = MAX_PAGE_ENTRIES) {
    this.max = Math.max(2, max);
  }

  add(p: TimelinePage): void {
    const n = this.entries.length;
    const last = this.entries[n - 1];
    if (last && this.counts[n - 1]! < this.group && (last.pass ?? 1) === (p.pass ?? 1)) {
      this.entries[n - 1] = mergePages(last, p);
      this.counts[n - 1]! += 1;
      return;
    }
    if (n === this.max) {
      // Neighbours merged pairwise; a last entry left with fewer than `group` pages keeps taking pages until full.
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

/**
 * Reads a stored timeline for display: undefined unless it is one of this version with its numbers in place (a
 * timeline is written by report-etl only, but a row may come from an older or newer release).
 */
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

/** Where an attempt's time went, in ms, along its path (see {@link timeSpent}). */
export interface TimeSpent {
  /** Waiting in line for a report slot (the fleet's maxConcurrentReports). */
  slot: number;
  /** Waiting for the server's answers: the token, start request, rendering (polls), page answers, the DELETE. */
  server: number;
  /** Waiting for page bytes to arrive (the network, or a server sending slowly). */
  network: number;
  /** Decoding pages here. */
  decode: number;
  /** PostgreSQL: recording and checking the attempt, and everything of the load transaction not spent on pages' answers, bytes or decoding (DELETE, COPY, applying the write mode, COMMIT). */
  database: number;
  /** The rest: the worker's own bookkeeping between steps. */
  other: number;
  /** The attempt's whole time. */
  total: number;
}

/**
 * Splits an attempt's time by who it waited for, along its path: steps one after another, and within the load the
 * pages' waits for answers and bytes and their decoding; what else the load took is PostgreSQL's (its DELETE, COPY
 * taking rows, the write mode, COMMIT). Overlaps are not counted twice: a page fetched ahead counts only as long as
 * the attempt waited for it; decoding while PostgreSQL deletes a replaced target's rows counts as decoding.
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
