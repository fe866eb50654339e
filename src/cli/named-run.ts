/** The run an id on the command line names, for the commands that take a run key or an attempt id. */
import type { Queryable } from '../db.ts';
import { loadingAttemptOf } from '../history/attempt-list.ts';
import { findRunOrAttempt, unnamedRunText, type RunOrAttempt } from '../history/run-or-attempt.ts';
import type { Cli } from './types.ts';

/** A run, or an attempt with its run: what {@link namedRunOrExit} gives back. */
export type NamedRun = Extract<RunOrAttempt, { kind: 'run' | 'attempt' }>;

/**
 * The run or attempt `id` names (a run key, of `job` when given, or an attempt id; docs/operations.md "Replaying
 * failed runs"). When it names none, or runs of several jobs, prints why on stderr, exits 2 and gives back undefined.
 */
export async function namedRunOrExit(cli: Cli, db: Queryable, id: string, job?: string): Promise<NamedRun | undefined> {
  const named = await findRunOrAttempt(db, id, job);
  if (named.kind === 'run' || named.kind === 'attempt') return named;
  cli.err(unnamedRunText(named, id, job));
  cli.exit(2);
  return undefined;
}

/**
 * The attempt whose load a named run stands for: the attempt named, or the run's attempt that loaded (attempt-list.ts
 * loadingAttemptOf), undefined when none did.
 */
export async function loadingAttemptOfNamed(db: Queryable, named: NamedRun): Promise<string | undefined> {
  return named.kind === 'attempt'
    ? named.attempt.attempt_id
    : await loadingAttemptOf(db, named.run.job, named.run.run_key);
}
