/**
 * Figures and printing of `npm run bench`: medians, the stdout table, the summary line.
 */

/** One case (size, output type, paging) with the medians of its repeats. */
export interface CaseResult {
  rows: number;
  outputType: string;
  /** Rows per page as asked; 'all' = one page. */
  paging: number | 'all';
  pages: number;
  /** Page bytes per run. */
  bytes: number;
  /** CSV bytes of the same rows (the limit's input). */
  csvBytes: number;
  /** Medians in ms. */
  e2eMs: number;
  limitMs: number;
  emptyCopyMs: number;
  firstRowMs: number;
  /** End-to-end rows/s and page MB/s (median run), in a fresh worker process. */
  rowsPerSec: number;
  /** End-to-end rows/s in a warm worker (the same report run once before in the process), median. */
  warmRowsPerSec?: number;
  /** Rows/s of the limit the ratio compares with (median run): psql's DELETE + \copy, in append mode \copy alone. */
  limitRowsPerSec?: number;
  mbPerSec: number;
  /** e2e / limit as throughputs: limitMs / e2eMs (1 = as fast as PostgreSQL alone). */
  ratio: number;
  ratioEmpty: number;
  /** Worker peak RSS, MB (1e6 bytes): median and max over the repeats. */
  rssMB: number;
  rssMaxMB: number;
  /** Worker CPU time (user + system) during runAttempt, ms, median. */
  cpuMs: number;
  /** Worker RSS before runAttempt (modules loaded: the runtime's floor), MB, median. */
  baseRssMB: number;
  /** Every repeat, for the record; peaks of process.memoryUsage() in bytes. */
  runs: {
    e2eMs: number;
    limitMs: number;
    emptyCopyMs: number;
    firstRowMs: number;
    rssMB: number;
    baseRssMB: number;
    cpuMs: number;
    peaks: { heapTotal: number; heapUsed: number; external: number; arrayBuffers: number };
  }[];
}

/** Median of numbers (mean of the middle two for an even count). */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Short row count: 100k, 1M, 5M. */
export function short(n: number): string {
  if (n >= 1e6 && n % 1e6 === 0) return `${n / 1e6}M`;
  if (n >= 1e3 && n % 1e3 === 0) return `${n / 1e3}k`;
  return String(n);
}

const HEAD = [
  'rows',
  'type',
  'paging',
  'pages',
  'MB',
  'e2e s',
  'rows/s',
  'warm rows/s',
  'psql rows/s',
  'MB/s',
  'limit s',
  'ratio',
  'empty s',
  'ratio0',
  '1st row ms',
  'cpu s',
  'RSS MB',
  'RSS max',
  'RSS base',
];

/** The results as an aligned text table. */
export function table(results: CaseResult[]): string {
  const lines = results.map((r) => [
    short(r.rows),
    r.outputType,
    r.paging === 'all' ? 'all' : short(r.paging),
    String(r.pages),
    (r.bytes / 1e6).toFixed(1),
    (r.e2eMs / 1000).toFixed(2),
    String(Math.round(r.rowsPerSec)),
    r.warmRowsPerSec === undefined ? '-' : String(Math.round(r.warmRowsPerSec)),
    r.limitRowsPerSec === undefined ? '-' : String(Math.round(r.limitRowsPerSec)),
    r.mbPerSec.toFixed(1),
    (r.limitMs / 1000).toFixed(2),
    r.ratio.toFixed(2),
    (r.emptyCopyMs / 1000).toFixed(2),
    r.ratioEmpty.toFixed(2),
    String(Math.round(r.firstRowMs)),
    (r.cpuMs / 1000).toFixed(2),
    r.rssMB.toFixed(0),
    r.rssMaxMB.toFixed(0),
    r.baseRssMB.toFixed(0),
  ]);
  const all = [HEAD, ...lines];
  const widths = HEAD.map((_, i) => Math.max(...all.map((l) => l[i]!.length)));
  return all.map((l) => l.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')).join('\n');
}

/**
 * The one-line summary: ratios of the main size at its first paging, and the largest worker RSS of all cases, against
 * the goals (txt >= 1.2, json >= 1.1, xml_query >= 1.0 of psql; RSS <= 150 MB).
 */
export function summary(
  results: CaseResult[],
  rows: number,
  paging: number | 'all',
  mode: 'replace' | 'append' = 'replace',
): string {
  const main = results.filter((r) => r.outputType !== 'pdf' && r.rows === rows && r.paging === paging);
  const ratios = main.map((r) => `${r.outputType} ${r.ratio.toFixed(2)}`).join(', ');
  const rss = Math.max(...results.map((r) => r.rssMaxMB));
  const limit = mode === 'append' ? 'of psql \\copy into an empty table' : 'of psql DELETE + \\copy';
  const rowPart =
    main.length > 0
      ? `${short(rows)} rows paging ${paging === 'all' ? 'all' : short(paging)}: ${ratios} ${limit} (goals: ` +
        `txt >= 1.2, json >= 1.1, xml_query >= 1.0); `
      : '';
  const docs = results.find((r) => r.outputType === 'pdf');
  const docPart = docs
    ? `pdf ${(docs.bytes / 1e6).toFixed(0)} MB in ${docs.pages} pages: ${docs.mbPerSec.toFixed(0)} MB/s, ` +
      `${docs.ratio.toFixed(2)} of psql \\copy, worker RSS ` +
      `+${Math.max(...docs.runs.map((x) => x.rssMB - x.baseRssMB)).toFixed(0)} MB; `
    : '';
  return `bench ${mode} ${rowPart}${docPart}peak RSS max ${rss.toFixed(0)} MB (goal <= 150)`;
}

/** The user's-path figures (bench/lib/cli-cases.ts): 10-row fixed costs in ms, the README command's peak RSS in MB. */
export interface UserPathResult {
  /** `report-etl run` of 10 rows as a whole process, spawn to exit (the recommended 250 ms first poll included). */
  wholeProcessMs: { median: number; min: number; max: number };
  /** runAttempt of 10 rows in a warm worker with 1 ms polls: report-etl's own time plus the local servers' answers. */
  warmWorkerMs: { median: number; min: number; max: number };
  warmWorkerCpuMs: number;
  /** 100k txt rows (paging 100,000) in a warm worker, rows/s, median of 3. */
  warm100kRowsPerSec: number;
  /** Rows of the peak-RSS run (txt, paging 100,000) and the peak RSS and seconds of each of its repeats. */
  cliRows: number;
  cliPeakRssMB: number[];
  cliSeconds: number[];
  /** Seconds of each `report-etl run` of 100k txt rows (paging 100,000), whole process. */
  cli100kSeconds?: number[];
}

/**
 * Rows/s that `report-etl run` adds per row in a fresh process, by size: rows over (median whole-process seconds of
 * the size minus the 10-row run's), for 100k and for the big run's rows.
 */
export function cliMarginalRowsPerSec(u: UserPathResult): { rows100k?: number; rowsBig: number } {
  const fixed = u.wholeProcessMs.median / 1000;
  const rowsBig = u.cliRows / (median(u.cliSeconds) - fixed);
  return u.cli100kSeconds ? { rows100k: 100_000 / (median(u.cli100kSeconds) - fixed), rowsBig } : { rowsBig };
}

/** The user's path in the summary line, against its goals (<= 0.6 s, <= 20 ms, <= 150 MB). */
export function userPath(u: UserPathResult): string {
  return (
    `10-row run ${(u.wholeProcessMs.median / 1000).toFixed(2)} s whole process (goal <= 0.6), ` +
    `${u.warmWorkerMs.median.toFixed(0)} ms in a warm worker (goal <= 20); ` +
    `report-etl run of ${short(u.cliRows)} rows peak RSS max ` +
    `${Math.max(...u.cliPeakRssMB).toFixed(0)} MB (goal <= 150); ` +
    `100k txt rows in a warm worker ${Math.round(u.warm100kRowsPerSec / 1000)}k rows/s` +
    marginal(u)
  );
}

function marginal(u: UserPathResult): string {
  const m = cliMarginalRowsPerSec(u);
  return m.rows100k === undefined
    ? ''
    : `; report-etl run, whole process, rows/s beyond the 10-row run: 100k ${Math.round(m.rows100k / 1000)}k, ` +
        `${short(u.cliRows)} ${Math.round(m.rowsBig / 1000)}k`;
}

/**
 * Rows/s by size for each row type at `paging` ("level rows/s from 100k to 5M rows"): fresh process, warm
 * worker and psql, e.g. `; rows/s 100k/1M/5M txt fresh 309k/589k/529k, warm 522k/600k/540k, psql 483k/505k/422k`.
 * Empty when fewer than two sizes were measured.
 */
export function levelLine(results: CaseResult[], paging: number | 'all'): string {
  const cases = results.filter((r) => r.outputType !== 'pdf' && r.paging === paging);
  const sizes = [...new Set(cases.map((r) => r.rows))].sort((a, b) => a - b);
  if (sizes.length < 2) return '';
  const k = (x: number | undefined) => (x === undefined ? '-' : `${Math.round(x / 1000)}k`);
  const types = [...new Set(cases.map((r) => r.outputType))].map((type) => {
    const of = (pick: (r: CaseResult) => number | undefined) =>
      sizes.map((n) => k(pick(cases.find((r) => r.rows === n && r.outputType === type)!))).join('/');
    return (
      `${type} fresh ${of((r) => r.rowsPerSec)}, warm ${of((r) => r.warmRowsPerSec)}, ` +
      `psql ${of((r) => r.limitRowsPerSec)}`
    );
  });
  return `; rows/s ${sizes.map(short).join('/')}: ${types.join('; ')}`;
}
