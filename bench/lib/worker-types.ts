/**
 * What the parent (bench/run.ts) and the measured worker (bench/lib/worker.js) exchange. The worker is plain
 * JavaScript running the compiled product (dist/, `npm run build`), as the Docker image does: a .ts file would
 * load Node's type stripper and add its memory to the RSS being measured.
 */

/** What the parent asks for. */
export interface WorkerInput {
  simUrl: string;
  databaseUrl: string;
  redisUrl: string;
  /** Report path, e.g. 'Big.avw'. */
  report: string;
  rows: number;
  outputType: 'txt' | 'json' | 'json_compact' | 'xml_query' | 'txt_cstr' | 'pdf';
  /** Report parameters besides ROWS (the document case's PAD_MB). */
  parameters?: Record<string, string>;
  paging: number;
  /** schema.table */
  target: string;
  mode: 'replace' | 'append';
  /** Unmeasured runs of the same job in the same process before the measured one (a warm worker); default 0. */
  warmups?: number;
  /** Keeps the pages (target.archive) for this many days; default off. */
  archiveKeepDays?: number;
}

/** What one measurement gives. */
export interface WorkerResult {
  ok: boolean;
  error?: string;
  /** The measured attempt's id (etl.attempts), when it succeeded. */
  attemptId?: string;
  plan?: string;
  rows: number;
  pages: number;
  /** Page bytes downloaded. */
  bytes: number;
  /** From just before runAttempt (first request) until it returned after COMMIT, in ms. */
  durationMs: number;
  /** From the same start until the loader began its COPY with the first decoded rows, in ms. */
  firstRowMs: number;
  /** process.resourceUsage().maxRSS at the end, in KiB. */
  maxRssKiB: number;
  /** CPU time (user + system) of the worker during runAttempt, in ms. */
  cpuMs: number;
  /** maxRSS just before runAttempt (the modules loaded, nothing run), in KiB. */
  baseRssKiB: number;
  /** Peaks of process.memoryUsage() sampled every 50 ms during the run, in bytes. */
  peaks: { heapTotal: number; heapUsed: number; external: number; arrayBuffers: number };
}
