/**
 * Reverting one appended run (README "Commands": revert; docs/observability.md "Run history"): its rows leave its
 * append target, found by their run key in the lineage column (lineage.ts), its claim leaves etl.appended_runs so that
 * a replay may append it again, and the revert is recorded in etl.reverts — in one transaction holding the target's
 * load lock, so that no load into the target interleaves with it. A run that cannot be reverted is refused with the
 * reason and what to do.
 */
import type pg from 'pg';
import { withTransaction, type Queryable } from '../db.ts';
import { shellQuote } from '../shell-quote.ts';
import { formatTime } from '../time-text.ts';
import { dropAppendClaim, getAppendClaim, otherJobsAppendingRunKey, type AppendClaim } from '../history/appends.ts';
import { newestAttempt } from '../history/attempts.ts';
import { insertRevert, isReverted, revertsOfRun } from '../history/reverts.ts';
import { getRun } from '../history/runs.ts';
import { parseTableName, quoteIdent, quoteTable, type TableName } from './identifiers.ts';
import { LINEAGE } from './lineage.ts';
import { columnTypeOf, lockTarget, targetExists } from './target-table.ts';

/** Why a run cannot be reverted. */
export type RevertRefusal =
  /** No such run in etl.runs. */
  | 'unknown-run'
  /** The run wrote in write mode replace or merge. */
  | 'not-append'
  /** The run has no appended rows: no attempt yet, or none that loaded. */
  | 'not-loaded'
  /** The run's rows were reverted already, and no attempt appended them since. */
  | 'already-reverted'
  /** The target has no lineage column, or the run's rows carry no run key: they were appended before lineage. */
  | 'no-lineage'
  /** The target table no longer exists. */
  | 'target-gone'
  /** Another job appended a run with the same run key into the same target: its rows cannot be told apart. */
  | 'shared-run-key';

/** What {@link revertAppendedRun} did: removed the run's rows, or refused saying why and what to do. */
export type RevertOutcome =
  // A refusal's message reads after the run's name: "run K of job J: <message>".
  | {
      readonly kind: 'reverted';
      /** The claim the run had: the attempt that appended its rows, the target, the rows it loaded, when. */
      readonly claim: AppendClaim;
      /** Rows deleted from the target: those with the run's key. */
      readonly rows: number;
      readonly revertId: string;
      readonly revertedAt: Date;
    }
  | { readonly kind: 'refused'; readonly reason: RevertRefusal; readonly message: string };

/** A refusal found inside the revert's transaction, which it rolls back. */
class Refused extends Error {
  readonly reason: RevertRefusal;
  constructor(reason: RevertRefusal, message: string) {
    super(message);
    this.reason = reason;
  }
}

/**
 * Reverts the appended run (job, runKey): deletes the target's rows whose `_etl_run_key` is its run key, its claim
 * in etl.appended_runs, sets its etl.runs `rows` back to NULL and records an etl.reverts row, in one transaction with
 * the target's load lock (target-table.ts lockTarget). Refuses, changing nothing, a run that is not an append, did
 * not load, was reverted already, or whose rows carry no run key (appended before lineage).
 * @param revertedBy `user@host`, recorded with the revert
 * @param time how its messages print a time (default time-text.ts formatTime without the job's zone)
 * @throws the database's errors (nothing was changed)
 */
export async function revertAppendedRun(
  pool: pg.Pool,
  job: string,
  runKey: string,
  revertedBy?: string,
  time: (t: Date) => string = (t) => formatTime(t),
): Promise<RevertOutcome> {
  const claim = await getAppendClaim(pool, job, runKey);
  if (!claim) return refusal(await whyNoClaim(pool, job, runKey, time));
  const target = parseTableName(claim.target_table);
  try {
    return await withTransaction(pool, async (tx) => {
      await lockTarget(tx, target);
      // Read again under the lock: a revert that got the lock first has removed the claim.
      const held = await getAppendClaim(tx, job, runKey, true);
      if (!held) throw new Refused(...(await whyNoClaim(tx, job, runKey, time)));
      await checkRevertible(tx, held, target, time);
      const { rowCount } = await tx.query(
        `DELETE FROM ${quoteTable(target)} WHERE ${quoteIdent(LINEAGE.runKey)} = $1`,
        [runKey],
      );
      const rows = rowCount ?? 0;
      if (rows === 0 && Number(held.rows) > 0) throw new Refused('no-lineage', rowsWithoutRunKey(held, time));
      await dropAppendClaim(tx, job, runKey);
      const { revertId, revertedAt } = await insertRevert(tx, {
        job,
        runKey,
        attemptId: held.attempt_id,
        appendedAt: held.committed_at,
        targetTable: held.target_table,
        appendedRows: Number(held.rows),
        rows,
        revertedBy,
      });
      return { kind: 'reverted', claim: held, rows, revertId, revertedAt } as const;
    });
  } catch (err) {
    if (err instanceof Refused) return refusal([err.reason, err.message]);
    throw err;
  }
}

function refusal([reason, message]: readonly [RevertRefusal, string]): RevertOutcome {
  return { kind: 'refused', reason, message };
}

/** The target exists, has the run key column, and no other job appended a run of the same key into it. */
async function checkRevertible(
  tx: pg.PoolClient,
  claim: AppendClaim,
  target: TableName,
  time: (t: Date) => string,
): Promise<void> {
  if (!(await targetExists(tx, target))) {
    throw new Refused(
      'target-gone',
      `it appended ${claim.rows} rows into ${claim.target_table}, which no longer exists: nothing to remove. ` +
        `${forgetClaim(claim)}`,
    );
  }
  if ((await columnTypeOf(tx, target, LINEAGE.runKey)) === undefined) {
    throw new Refused(
      'no-lineage',
      `${claim.target_table} has no ${LINEAGE.runKey} column: the run appended its ${claim.rows} rows (at ` +
        `${time(claim.committed_at)}) before report-etl tagged appended rows with their run ` +
        `(the next append run into the table adds the column), so they cannot be told from other runs' rows. ` +
        `${byHand(claim)}`,
    );
  }
  const others = await otherJobsAppendingRunKey(tx, claim.job, claim.run_key, claim.target_table);
  if (others.length > 0) {
    throw new Refused(
      'shared-run-key',
      `runs of job ${others.join(', ')} appended rows with the same run key into ${claim.target_table}: their rows ` +
        `cannot be told apart. ${byHand(claim)}`,
    );
  }
}

/** The message for a run whose rows carry no run key although the target has the column: appended before it had. */
function rowsWithoutRunKey(claim: AppendClaim, time: (t: Date) => string): string {
  return (
    `no row of ${claim.target_table} carries run key ${claim.run_key}: the run appended its ${claim.rows} rows ` +
    `(at ${time(claim.committed_at)}) before the table had the ${LINEAGE.runKey} column, so they cannot be ` +
    `told from other runs' rows; nothing was changed. ${byHand(claim)}`
  );
}

/** How to delete a run's rows by hand, and then its claim. */
function byHand(claim: AppendClaim): string {
  return (
    `Delete them by hand if something in the rows tells them apart (they have ${LINEAGE.runKey} NULL), then ` +
    `${forgetClaim(claim)}`
  );
}

/** The SQL that removes a run's claim, so that a replay may append it again. */
function forgetClaim(claim: AppendClaim): string {
  return (
    `DELETE FROM etl.appended_runs WHERE job = ${sqlText(claim.job)} AND run_key = ${sqlText(claim.run_key)}; ` +
    `lets "report-etl replay" append the run again.`
  );
}

/** A SQL string literal. */
function sqlText(s: string): string {
  return `'${s.replaceAll("'", "''")}'`;
}

/** Why a run without a claim in etl.appended_runs cannot be reverted (a reason to follow "run K of job J: "). */
async function whyNoClaim(
  db: Queryable,
  job: string,
  runKey: string,
  time: (t: Date) => string,
): Promise<[RevertRefusal, string]> {
  const run = await getRun(db, job, runKey);
  const newest = await newestAttempt(db, job, runKey);
  const reverts = await revertsOfRun(db, job, runKey);
  if (!run) return ['unknown-run', 'no such run in etl.runs'];
  if (newest && newest.write_mode !== 'append') {
    return [
      'not-append',
      `it loaded ${newest.target_table} in write mode ${newest.write_mode}: only the rows of an append run can be ` +
        `reverted (a ${newest.write_mode} run's rows are ${newest.write_mode === 'merge' ? 'upserted' : 'replaced'} ` +
        `by the next run of the job)`,
    ];
  }
  const last = reverts[0];
  if (last && isReverted(run, reverts)) {
    return [
      'already-reverted',
      `it was already reverted at ` +
        `${time(last.reverted_at)}${last.reverted_by ? ` by ${last.reverted_by}` : ''}: its ${last.rows} ` +
        `rows were removed from ${last.target_table}; "report-etl replay ${shellQuote(runKey)}" appends it again`,
    ];
  }
  const state = newest
    ? `its newest attempt (${newest.attempt}) ${newest.status === 'running' ? 'is still running' : newest.status}`
    : 'it has no attempt yet';
  const since = last ? ` since it was reverted at ${time(last.reverted_at)}` : '';
  return ['not-loaded', `it appended no rows${since}: ${state}; nothing to revert`];
}
