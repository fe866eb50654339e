/** The run an id on the command line names, for the commands that take a run key or an attempt id. */
import type { Queryable } from '../db.ts';
import { loadingAttemptOf } from '../history/attempt-list.ts';
import { getArchive, newestCompleteArchive, type AttemptArchive } from '../history/page-archive.ts';
import { listRunDocuments, type RunDocument } from '../history/run-documents.ts';
import { findRunOrAttempt, unnamedRunText, type RunOrAttempt } from '../history/run-or-attempt.ts';
import { fail, type Cli } from './types.ts';

/** A run, or an attempt with its run: what {@link namedRunOrExit} gives back. */
export type NamedRun = Extract<RunOrAttempt, { kind: 'run' | 'attempt' }>;

/**
 * The run or attempt `id` names (a run key, of `job` when given, or an attempt id; docs/operations.md "Replaying
 * failed runs"). When it names none, or runs of several jobs, prints why on stderr, exits 2 and gives back undefined.
 * @param command `replay` and `revert` say why as `report-etl <command>: …`, naming `shownJob` (default `job`)
 */
export async function namedRunOrExit(
  cli: Cli,
  db: Queryable,
  id: string,
  job?: string,
  command?: string,
  shownJob = job,
): Promise<NamedRun | undefined> {
  const named = await findRunOrAttempt(db, id, job);
  if (named.kind === 'run' || named.kind === 'attempt') return named;
  if (!command) fail(cli, unnamedRunText(named, id, job));
  else if (named.kind === 'none')
    fail(
      cli,
      `report-etl ${command}: no run with run key "${id}" and no attempt with that id` +
        `${shownJob ? ` in job ${shownJob}` : ''} (see "report-etl runs", or "report-etl runs --attempts")`,
    );
  else
    fail(
      cli,
      `report-etl ${command}: run key "${id}" is a run of several jobs (${named.jobs.join(', ')}): say which ` +
        'with --job',
    );
  return undefined;
}

/** What the user named, in words: `run K of job J`, or `attempt A (attempt 2 of run K of job J)`. */
export function describeNamed(named: NamedRun): string {
  const run = `run ${named.run.run_key} of job ${named.run.job}`;
  return named.kind === 'run'
    ? run
    : `attempt ${named.attempt.attempt_id} (attempt ${named.attempt.attempt} of ${run})`;
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

/**
 * What a named run kept (docs/operations.md "Kept pages"): the documents its load committed (pdf, excel, word: a
 * documents run's kept pages, target.archive storing them only when a load fails), else the kept pages of the
 * attempt named, or the run's newest complete ones; `archive` undefined when there are none.
 */
export async function keptOfNamed(
  db: Queryable,
  named: NamedRun,
): Promise<{ documents: { attemptId: string; docs: RunDocument[] } } | { archive: AttemptArchive | undefined }> {
  const loadedBy = await loadingAttemptOfNamed(db, named);
  const docs = loadedBy ? await listRunDocuments(db, loadedBy) : [];
  if (loadedBy && docs.length > 0) return { documents: { attemptId: loadedBy, docs } };
  return {
    archive:
      named.kind === 'attempt'
        ? await getArchive(db, named.attempt.attempt_id)
        : await newestCompleteArchive(db, named.run.job, named.run.run_key),
  };
}

/** The named run in words for "kept no pages" messages: `attempt A` or `run K`. */
export function namedWhat(named: NamedRun): string {
  return named.kind === 'attempt' ? `attempt ${named.attempt.attempt_id}` : `run ${named.run.run_key}`;
}
