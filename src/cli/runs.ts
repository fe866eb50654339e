/**
 * `report-etl runs [--attempts] [--job J] [--status S | --failed] [--since 2d] [--limit N]`: the run history as a
 * table, newest first, one line per logical run or per attempt (with what each attempt asked the server for), and how
 * many the limit left out. Times as time-text.ts prints them, in each job's zone read from jobs.yaml when it can be.
 * Read-only: it never migrates and needs no Redis.
 */
import { fail, type RegisterCommand } from './types.ts';
import { textTable } from './text-table.ts';
import type { AttemptListRow } from '../history/attempt-list.ts';
import type { RunListRow } from '../history/run-list.ts';
import { Option } from 'commander';
import { configOption, queuePrefixOption, sinceOption, wholeNumber } from './options.ts';
import { configGiven, jobZones, type ZoneOf } from './job-zones.ts';
import { keptPagesText, readAttemptRequest, reportRequestText } from '../history/attempt-request.ts';
import { commaCount, readingWords, readProgress, stoppedAtWords } from '../history/attempt-progress.ts';
import { formatTime } from '../time-text.ts';
import { withPool } from './stores.ts';
import { ATTEMPT_STATUSES } from '../vocabulary.ts';

const TAIL = ['trigger', 'started', 'duration', 'rows', 'error'];
const RUN_HEADERS = ['run key', 'job', 'status', 'attempts', ...TAIL];
const ATTEMPT_HEADERS = [
  'attempt id',
  'job',
  'run key',
  'attempt',
  'status',
  ...TAIL.slice(0, -1),
  'interval',
  'request sent',
  'error',
];

/** Duration in ms as `850ms`, `12.3s`, `4m05s`. */
function formatDuration(ms: number | null): string {
  if (ms === null) return '-';
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

/** A time of `job` (time-text.ts formatTime), `-` for none. */
const timeOf = (zoneOf: ZoneOf) => (t: Date | null, job: string) => (t ? formatTime(t, zoneOf(job)) : '-');

/**
 * What an attempt asked for, as two cells: its interval `(start, end]` and its request as sent,
 * `7777 Sales/Orders txt/500 FROM=2026-11-24 TO=2026-11-25`; `-` for an attempt recorded before that was kept; for
 * one that loaded kept pages, `sent nothing: loaded the kept pages of attempt <id> (which sent …)`.
 */
function requestCells(a: AttemptListRow, time: (t: Date) => string): [string, string] {
  const r = readAttemptRequest(a.request);
  if (!r) return ['-', '-'];
  const start = new Date(r.logicalStart);
  const end = new Date(r.logicalEnd);
  const interval = start.getTime() === end.getTime() ? time(end) : `(${time(start)}, ${time(end)}]`;
  const pagesFrom = r.pagesFrom ?? a.pages_from;
  if (pagesFrom) return [interval, keptPagesText(pagesFrom, r.pagesFrom ? r.report : undefined)];
  if (!r.report) return [interval, 'not sent'];
  return [interval, reportRequestText(r.report)];
}

/**
 * Logical runs as a table; `duration` from the first attempt's start to the last finish, or to now while the newest
 * attempt runs; status `-` while the first attempt waits for a report slot.
 */
function formatRunTable(rows: RunListRow[], zoneOf: ZoneOf, now = Date.now()): string[] {
  const time = timeOf(zoneOf);
  return textTable(
    RUN_HEADERS,
    rows.map((r) => {
      const end = r.status === 'running' ? now : r.last_finished_at?.getTime();
      return [
        r.run_key,
        r.job,
        r.reverted_at ? `${r.status} (reverted)` : (r.status ?? '-'),
        String(r.attempts),
        r.trigger,
        time(r.first_started_at, r.job),
        formatDuration(r.first_started_at && end !== undefined ? end - r.first_started_at.getTime() : null),
        r.rows ?? '-',
        r.error_first_line ?? '',
      ];
    }),
  );
}

/** Attempts as a table; a running attempt's duration runs on to now. */
function formatAttemptTable(rows: AttemptListRow[], zoneOf: ZoneOf, now = Date.now()): string[] {
  const time = timeOf(zoneOf);
  return textTable(
    ATTEMPT_HEADERS,
    rows.map((a) => [
      a.attempt_id,
      a.job,
      a.run_key,
      String(a.attempt),
      a.status,
      a.trigger,
      time(a.started_at, a.job),
      formatDuration(
        a.duration_ms === null ? (a.status === 'running' ? now - a.started_at.getTime() : null) : Number(a.duration_ms),
      ),
      a.rows ?? '-',
      ...requestCells(a, (t) => time(t, a.job)),
      errorCell(a),
    ]),
  );
}

/**
 * An attempt's error cell: its first error line, led by how far its reading got when it has no figures of its own (a
 * running attempt, or one whose process died: etl.attempts.progress), unless the error says it already.
 */
function errorCell(a: AttemptListRow): string {
  const error = a.error_first_line ?? '';
  const p = a.pages === null && a.status !== 'succeeded' ? readProgress(a.progress) : undefined;
  if (!p || /stopped (?:at|after) page|stopped while the server rendered/.test(error)) return error;
  if (a.status === 'running') return readingWords(p, commaCount);
  return [`${stoppedAtWords(p, commaCount)}, nothing committed`, error].filter(Boolean).join('; ');
}

export const registerRuns: RegisterCommand = (program, cli) => {
  const cmd = program
    .command('runs')
    .description(
      'show the run history, newest first: one line per run (etl.runs), or per attempt with --attempts ' +
        '(etl.attempts)',
    );
  sinceOption(
    queuePrefixOption(configOption(cmd, "jobs.yaml, read for each job's time zone only")),
    'only runs taken from the queue or started since (with --attempts: attempts started since)',
  )
    .option('--attempts', 'one line per attempt (attempt id, run key, attempt number) instead of per run')
    .option('--job <job>', 'only this job')
    .addOption(
      new Option(
        '--status <status>',
        'only runs whose newest attempt has this status (with --attempts: only such attempts)',
      ).choices(ATTEMPT_STATUSES),
    )
    .addOption(new Option('--failed', 'the same as --status failed (as replay --failed)').conflicts('status'))
    .option('--limit <n>', 'most rows', wholeNumber(1), 50)
    .action(
      async (opts: {
        config: string;
        queuePrefix: string;
        attempts?: boolean;
        job?: string;
        status?: string;
        failed?: boolean;
        since?: Date;
        limit: number;
      }) => {
        const [{ hasRunHistory, listJobNames, listRuns }, { listAttempts }, { closestMatch }] = await Promise.all([
          import('../history/run-list.ts'),
          import('../history/attempt-list.ts'),
          import('../closest-match.ts'),
        ]);
        const status = opts.failed ? 'failed' : opts.status;
        const filter = { job: opts.job, status, since: opts.since, limit: opts.limit };
        const zoneOf = await jobZones(cli, opts.config, configGiven(cmd));
        let unknownJob: string | undefined;
        let matching = 0;
        const lines = await withPool(async (pool) => {
          if (!(await hasRunHistory(pool))) return undefined;
          const rows = opts.attempts ? await listAttempts(pool, filter) : await listRuns(pool, filter);
          matching = rows[0]?.matching ?? 0;
          const table = opts.attempts
            ? formatAttemptTable(rows as AttemptListRow[], zoneOf)
            : formatRunTable(rows as RunListRow[], zoneOf);
          if (table.length === 1 && opts.job !== undefined) {
            // Nothing for this job: a job the history has never seen is most likely a typo.
            const known = await listJobNames(pool);
            if (!known.some((k) => k === opts.job || k.startsWith(`${opts.job}[`))) {
              const near = closestMatch(opts.job, known);
              const some = known.length > 10 ? `${known.slice(0, 10).join(', ')}, …` : known.join(', ') || 'none';
              const hint = near ? `did you mean "${near}"? ` : '';
              unknownJob = `report-etl runs: no job "${opts.job}" in the run history (${hint}jobs with runs: ${some})`;
            }
          }
          return table;
        });
        if (unknownJob) return fail(cli, unknownJob);
        const what = opts.attempts ? 'attempts' : 'runs';
        if (lines === undefined || lines.length === 1) {
          cli.out(`no ${what}`);
          if (lines === undefined)
            cli.err(
              'report-etl runs: no run history in this database yet (schema etl has no attempts table): check ' +
                'DATABASE_URL, or run `report-etl migrate` / start a worker to create it',
            );
          return;
        }
        for (const line of lines) cli.out(line);
        const shown = lines.length - 1;
        // Said on stderr: a script reading the table gets the table alone.
        if (matching > shown) cli.err(`${shown} of ${matching} ${what}; --limit N shows more`);
      },
    );
};
