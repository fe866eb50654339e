/**
 * `report-etl runs [--job J] [--status S] [--since 2d] [--limit N]`: the run history as a table, newest first.
 * Read-only: it never migrates and needs no Redis; a database without the run history says so on stderr.
 */
import type { RegisterCommand } from './types.ts';
import type { RunListRow } from '../history/run-list.ts';
import { queuePrefixOption, sinceOption, wholeNumber } from './options.ts';
import { withHistory } from './queue-session.ts';

const HEADERS = ['run id', 'job', 'status', 'attempt', 'trigger', 'started', 'duration', 'rows', 'error'] as const;

/** Duration in ms as `850ms`, `12.3s`, `4m05s`. */
export function formatDuration(ms: number | null): string {
  if (ms === null) return '-';
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

/** The rows as an aligned text table with a header line; errors cut to 80 characters. */
export function formatRunTable(rows: RunListRow[]): string[] {
  const cells = rows.map((r) => [
    r.run_id,
    r.job,
    r.status,
    String(r.attempt),
    r.trigger,
    r.started_at.toISOString().replace('T', ' ').slice(0, 19),
    formatDuration(r.duration_ms === null ? (r.status === 'running' ? Date.now() - r.started_at.getTime() : null) : Number(r.duration_ms)),
    r.rows ?? '-',
    (r.error_first_line ?? '').slice(0, 80),
  ]);
  const widths = HEADERS.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: readonly string[]) => c.map((v, i) => (i === c.length - 1 ? v : v.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(HEADERS), ...cells.map(line)];
}

export const registerRuns: RegisterCommand = (program, cli) => {
  sinceOption(queuePrefixOption(program.command('runs').description('show the run history (etl.runs), newest first')), 'only runs started since')
    .option('--job <job>', 'only this job')
    .option('--status <status>', 'only runs with this status: running | succeeded | failed | interrupted')
    .option('--limit <n>', 'most rows', wholeNumber(1), 50)
    .action(async (opts: { queuePrefix: string; job?: string; status?: string; since?: Date; limit: number }) => {
      const { hasRunHistory, listRuns } = await import('../history/run-list.ts');
      const rows = await withHistory(async (pool) =>
        (await hasRunHistory(pool)) ? listRuns(pool, { job: opts.job, status: opts.status, since: opts.since, limit: opts.limit }) : undefined,
      );
      if (rows === undefined) {
        cli.out('no runs');
        cli.err('report-etl runs: no run history in this database yet (schema etl has no runs table): check DATABASE_URL, or run `report-etl migrate` / start a worker to create it');
        return;
      }
      if (rows.length === 0) {
        cli.out('no runs');
        return;
      }
      for (const line of formatRunTable(rows)) cli.out(line);
    });
};
