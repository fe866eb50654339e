/** What an id on the command line names: a run by its run key, or an attempt by its id. */
import type { Queryable } from '../db.ts';
import { getAttempt, type AttemptRow } from './attempts.ts';
import { findRunsByKey, getRun, type RunRow } from './runs.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What an id named: a run, an attempt (with its run), run keys of several jobs, or nothing. */
export type RunOrAttempt =
  | { kind: 'run'; run: RunRow }
  | { kind: 'attempt'; attempt: AttemptRow; run: RunRow }
  | { kind: 'ambiguous'; jobs: string[] }
  | { kind: 'none' };

/**
 * Looks `id` up as a run key (of `job` when given, or of one of its mandants' runs), then as an attempt id (a
 * foreground run's key is its first attempt's id: both name the same run).
 */
export async function findRunOrAttempt(db: Queryable, id: string, job?: string): Promise<RunOrAttempt> {
  const runs = await findRunsByKey(db, id, job);
  if (runs.length > 1) return { kind: 'ambiguous', jobs: runs.map((r) => r.job) };
  if (runs.length === 1) return { kind: 'run', run: runs[0]! };
  const attempt = UUID.test(id) ? await getAttempt(db, id) : undefined;
  if (!attempt || (job !== undefined && attempt.job !== job && !attempt.job.startsWith(`${job}[`)))
    return { kind: 'none' };
  const run = await getRun(db, attempt.job, attempt.run_key);
  return run ? { kind: 'attempt', attempt, run } : { kind: 'none' };
}

/**
 * The line a command prints (then exits 2) when `id` named no single run.
 * @param job the command's `--job`, when given
 */
export function unnamedRunText(named: Extract<RunOrAttempt, { kind: 'none' | 'ambiguous' }>, id: string, job?: string) {
  return named.kind === 'none'
    ? `error: "${id}" is not a run key nor an attempt id${job ? ` of job ${job}` : ''} ` +
        '(see "report-etl runs", or "report-etl runs --attempts")'
    : `error: run key "${id}" is a run of several jobs (${named.jobs.join(', ')}): say which with --job`;
}
