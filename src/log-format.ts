/**
 * Log lines for a person at a terminal: the pino records as one short line each, a progress line per page, the start
 * and end of a run, and `LEVEL message key=value …` for everything else. Secrets are redacted before this.
 */
import { ConfigError } from './errors.ts';

/** How log records are written: JSON lines (for machines) or {@link prettyLine}s (for a person at a terminal). */
export type LogFormat = 'json' | 'pretty';

/** The log formats, for option parsing. */
export const LOG_FORMATS: readonly LogFormat[] = ['json', 'pretty'];

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** Fields every record has, or that a line shows in its own words: not repeated as key=value. */
const OMIT = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'v', 'attemptId', 'traceId', 'job']);

const int = (n: unknown) => (typeof n === 'number' ? Math.round(n).toLocaleString('en-US') : String(n));
/** `1 page`, `3 pages`. */
const count = (n: unknown, word: string) => `${int(n)} ${word}${n === 1 ? '' : 's'}`;
const mb = (bytes: unknown) => {
  if (typeof bytes !== 'number') return '? MB';
  return bytes < 1e6 ? `${Math.round(bytes / 1e3)} kB` : `${(bytes / 1e6).toFixed(1)} MB`;
};
const value = (v: unknown) => (typeof v === 'string' && !/[\s"=]/.test(v) ? v : JSON.stringify(v));

/** The text after `job: ` of the messages that have a line of their own. */
const LINES: Record<string, (r: Record<string, unknown>) => string> = {
  'page loaded': (r) =>
    `page ${r.page}: ${count(r.rows, 'row')}, ${mb(r.bytes)}, ${int(r.rowsPerSec)} rows/s — ` +
    `${count(r.totalRows, 'row')}, ${r.totalMB} MB in ${r.elapsedS} s so far`,
  // A foreground run's key is its first attempt's id: the one UUID is said once; the trace id once per attempt.
  'run started': (r) =>
    `run started: ${r.report} as ${r.outputType}, attempt ${r.attempt} (${r.trigger}), run ${r.runKey}` +
    `${r.attemptId === r.runKey ? '' : `, attempt id ${r.attemptId}`}` +
    `${typeof r.traceId === 'string' ? `, trace ${r.traceId}` : ''}`,
  loading: (r) => `loading into ${r.table} (plan ${r.plan}, ${r.columns} columns)`,
  'report job finished': (r) =>
    `report job ${r.reportJobId ?? ''} finished on the server: ${count(r.rows, 'row')} in ${count(r.pages, 'page')}`,
  'run succeeded': (r) =>
    `run succeeded: ${count(r.rows, 'row')}, ${count(r.pages, 'page')}, ${mb(r.bytes)} in ` +
    `${((r.durationMs as number) / 1000).toFixed(1)} s (${int(r.rowsPerSec)} rows/s, plan ${r.plan})`,
};

/**
 * One pino record (the parsed JSON line) as a line of text, ending in a newline. A line break inside (a server's
 * message) starts an indented continuation line, so no text can pass for a log line of its own.
 * @param record e.g. `{ level: 30, time: 1763870000000, msg: 'page loaded', page: 3, rows: 10000, … }`
 */
export function prettyLine(record: Record<string, unknown>): string {
  return `${oneRecord(record)
    .slice(0, -1)
    .replace(/\r\n?|[\n\v\f\u0085\u2028\u2029]/g, '\n    ')}\n`;
}

function oneRecord(r: Record<string, unknown>): string {
  const at = new Date(typeof r.time === 'number' ? r.time : Date.now()).toTimeString().slice(0, 8);
  const job = typeof r.job === 'string' ? `${r.job}: ` : '';
  const line = typeof r.msg === 'string' ? LINES[r.msg] : undefined;
  if (line) return `${at} ${job}${line(r)}\n`;
  const level = LEVELS[r.level as number] ?? String(r.level);
  const rest = Object.entries(r)
    .filter(([k, v]) => !OMIT.has(k) && v !== undefined)
    .map(([k, v]) => `${k}=${value(v)}`);
  return `${at} ${level.padEnd(5)} ${job}${String(r.msg ?? '')}${rest.length ? `  ${rest.join(' ')}` : ''}\n`;
}

/**
 * The format to use: an explicit one, else `LOG_FORMAT`, else pretty on a terminal and JSON otherwise.
 * @throws ConfigError naming the accepted values when LOG_FORMAT or `explicit` is something else
 */
export function resolveLogFormat(
  explicit?: string,
  env: NodeJS.ProcessEnv = process.env,
  isTty = Boolean(process.stderr.isTTY),
): LogFormat {
  const chosen = explicit ?? env.LOG_FORMAT;
  if (chosen === undefined || chosen === '') return isTty ? 'pretty' : 'json';
  if ((LOG_FORMATS as readonly string[]).includes(chosen)) return chosen as LogFormat;
  throw new ConfigError([`LOG_FORMAT is "${chosen}": write one of ${LOG_FORMATS.join(', ')}`]);
}
