/**
 * Options of `npm run bench` (bench/run.ts), from argv (`--rows 1000000`, `--rows=1000000`) or the
 * environment (BENCH_ROWS=1000000); argv wins.
 */
import { LONG_RUNNING_FLAGS, NODE_FLAGS } from '../../src/runtime-flags.ts';
import { cpus } from 'node:os';
import { join, resolve } from 'node:path';

/** Output types the benchmark can measure; pdf is the document case (bench/lib/documents.ts), the others row cases. */
export const BENCH_TYPES = ['txt', 'json', 'json_compact', 'xml_query', 'txt_cstr', 'pdf'] as const;
export type BenchType = (typeof BENCH_TYPES)[number];
/** The row cases' types. */
export type RowBenchType = Exclude<BenchType, 'pdf'>;

/** Resolved options. */
export interface BenchOptions {
  /** Rows of the main measurement (all pagings), default 1,000,000. */
  rows: number;
  types: BenchType[];
  /** Rows per page; 'all' = one page holding every row. Default [100000, 'all']. */
  paging: (number | 'all')[];
  /** Measurements per case; the median is reported. Default 3. */
  repeats: number;
  /**
   * Row counts of the growth check (first paging only) besides `rows`; default 100000, plus 5000000 with BENCH_FULL=1.
   */
  sizes: number[];
  /** Extra node flags of the measured worker, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" (BENCH_WORKER_ARGS). */
  workerArgs: string[];
  /**
   * Other workers measured in the same repeats, interleaved with this checkout's (BENCH_VARIANTS): each
   * `label=DIR` or `label=DIR|FLAGS`, separated by `;` — DIR another checkout with its dist/ built (`.` this one),
   * FLAGS its node flags (default workerArgs). Their cases are reported as `<type>@<label>`.
   */
  variants: { label: string; worker?: string; args: string[] }[];
  /** Whether to measure warm workers too (BENCH_WARM, default 1). */
  warm: boolean;
  /**
   * Write mode of the measured runs. replace (default): DELETE + COPY into the target, compared with the same
   * DELETE + COPY done by PostgreSQL alone. append: COPY into the emptied target, compared with COPY into an empty
   * table — the cost of report-etl itself, without replace's DELETE.
   */
  mode: 'replace' | 'append';
  /**
   * Document case: MB (1e6 bytes) of pdf pages in all (BENCH_DOC_MB, default 1000) and per page (BENCH_DOC_PAGE_MB,
   * 200).
   */
  docMB: number;
  docPageMB: number;
  /** Latency the page server adds to every response, ms (BENCH_LATENCY, default 0): the simulator's latencyMs fault. */
  latencyMs: number;
  /**
   * The user's-path cases (bench/lib/cli-cases.ts): fixed cost of a 10-row run, peak RSS of the README's command
   * (BENCH_CLI, default 1).
   */
  cli: boolean;
  databaseUrl: string;
  redisUrl: string;
}

/**
 * An option from argv (`--name value`, `--name=value`) or else the environment (BENCH_NAME); undefined when neither.
 */
export function arg(argv: string[], name: string): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === `--${name}`) return argv[i + 1];
    if (a.startsWith(`--${name}=`)) return a.slice(name.length + 3);
  }
  return process.env[`BENCH_${name.toUpperCase().replaceAll('-', '_')}`];
}

/** A positive whole number as written (`100000`, `100_000`, `100k`, `5m`). @throws Error naming `what` */
export function count(s: string, what: string): number {
  const n = Number(s.replaceAll('_', '').replace(/k$/i, '000').replace(/m$/i, '000000'));
  if (!Number.isInteger(n) || n < 1) throw new Error(`${what}: expected a positive integer (or 100k, 5m), got '${s}'`);
  return n;
}

/**
 * Reads the options.
 * @throws Error naming the bad option
 */
export function readOptions(argv: string[] = process.argv.slice(2)): BenchOptions {
  const rows = count(arg(argv, 'rows') ?? '1000000', 'rows');
  const types = (arg(argv, 'types') ?? BENCH_TYPES.join(',')).split(',').map((t) => t.trim());
  for (const t of types)
    if (!(BENCH_TYPES as readonly string[]).includes(t))
      throw new Error(`types: unknown output type '${t}' (one of ${BENCH_TYPES.join(', ')})`);
  const paging = (arg(argv, 'paging') ?? '100000,all')
    .split(',')
    .map((p) => (p.trim() === 'all' ? ('all' as const) : count(p.trim(), 'paging')));
  const repeats = count(arg(argv, 'repeats') ?? '3', 'repeats');
  const full = arg(argv, 'full') === '1' || argv.includes('--full');
  const sizesRaw = arg(argv, 'sizes');
  const sizes =
    sizesRaw !== undefined
      ? sizesRaw
          .split(',')
          .filter((s) => s.trim() !== '')
          .map((s) => count(s.trim(), 'sizes'))
      : full
        ? [100_000, 5_000_000]
        : [100_000];
  // Default: the flags a worker runs with, so the measured worker is the real one.
  const workerArgs = (arg(argv, 'worker-args') ?? [...NODE_FLAGS, ...LONG_RUNNING_FLAGS].join(' '))
    .split(' ')
    .filter(Boolean);
  const mode = arg(argv, 'mode') ?? 'replace';
  if (mode !== 'replace' && mode !== 'append') throw new Error(`mode: expected replace or append, got '${mode}'`);
  return {
    mode,
    docMB: count(arg(argv, 'doc-mb') ?? '1000', 'doc-mb'),
    docPageMB: count(arg(argv, 'doc-page-mb') ?? '200', 'doc-page-mb'),
    rows,
    types: types as BenchType[],
    paging,
    repeats,
    sizes: [...new Set([...sizes, rows])].sort((a, b) => a - b),
    workerArgs,
    variants: (arg(argv, 'variants') ?? '')
      .split(';')
      .filter((v) => v.trim() !== '')
      .map((v) => {
        const m = /^\s*([\w.-]+)=([^|]*)(?:\|(.*))?$/.exec(v);
        if (!m) throw new Error(`variants: expected label=DIR or label=DIR|FLAGS, got '${v}'`);
        const dir = m[2]!.trim();
        return {
          label: m[1]!,
          ...(dir === '' || dir === '.' ? {} : { worker: join(resolve(dir), 'bench', 'lib', 'worker.js') }),
          args: m[3] === undefined ? workerArgs : m[3].split(' ').filter(Boolean),
        };
      }),
    warm: (arg(argv, 'warm') ?? '1') !== '0',
    latencyMs: Number(arg(argv, 'latency') ?? '0'),
    cli: (arg(argv, 'cli') ?? '1') !== '0',
    databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  };
}

/** A short description of the machine for the results file. */
export function machine(): { cpus: number; cpu: string; node: string } {
  const c = cpus();
  return { cpus: c.length, cpu: c[0]?.model ?? 'unknown', node: process.version };
}
