/**
 * `report-etl revert <run-key | attempt-id> [--job J]`: removes the rows one append run loaded from its target
 * (found by their run key in the lineage column, README "Loaded tables"), and its claim in etl.appended_runs so that
 * `report-etl replay` can append it again, in one transaction; records the revert in etl.reverts (README "Run
 * history") and prints what it removed. The run is named as `replay` names it: its run key, or the id of any of its
 * attempts. Exit 0 reverted; 2 when the key or id names nothing or runs of several jobs, or the run cannot be
 * reverted (not an append, not loaded, already reverted, rows without a run key), with the reason and what to do.
 * Needs PostgreSQL only.
 */
import { hostname, userInfo } from 'node:os';
import { describeNamed, unnamedRunProblem } from './replay.ts';
import type { RegisterCommand } from './types.ts';

/** `user@host` of this process, recorded with a revert (the host alone when the user has no name here). */
function whoAmI(): string {
  let user = '';
  try {
    user = userInfo().username;
  } catch {
    // A container user without a passwd entry.
  }
  return user ? `${user}@${hostname()}` : hostname();
}

export const registerRevert: RegisterCommand = (program, cli) => {
  program
    .command('revert <run-key|attempt-id>')
    .description(
      "remove one append run's rows from its target, so that a replay can append it again; give its run key, or an attempt id",
    )
    .option('--job <job>', 'the job the run key is of, when run keys of several jobs match')
    .action(async (id: string, opts: { job?: string }) => {
      // Loaded here, not at the top: `--help` and the other commands need none of it (start-up cost).
      const [{ openHistoryPool }, { migrate }, { makeLogger }, { findRunOrAttempt }, { revertAppendedRun }] =
        await Promise.all([
          import('../app/bootstrap.ts'),
          import('../history/migrate.ts'),
          import('../logger.ts'),
          import('../history/run-or-attempt.ts'),
          import('../warehouse/revert.ts'),
        ]);
      const logger = makeLogger();
      const pool = await openHistoryPool(logger, { poolMax: 2 });
      try {
        await migrate(pool, logger);
        const named = await findRunOrAttempt(pool, id, opts.job);
        if (named.kind === 'none' || named.kind === 'ambiguous') {
          cli.err(unnamedRunProblem('revert', id, opts.job, named)!);
          cli.exit(2);
          return;
        }
        const outcome = await revertAppendedRun(pool, named.run.job, named.run.run_key, whoAmI());
        if (outcome.kind === 'refused') {
          cli.err(`report-etl revert: ${describeNamed(named)}: not reverted: ${outcome.message}`);
          cli.exit(2);
          return;
        }
        const { claim, rows } = outcome;
        const missing = Number(claim.rows) - rows;
        cli.out(
          `${describeNamed(named)}: reverted: removed ${rows} row${rows === 1 ? '' : 's'} from ${claim.target_table} ` +
            `(appended by attempt ${claim.attempt_id} at ${claim.committed_at.toISOString()}` +
            `${missing !== 0 ? `; the run had appended ${claim.rows}, ${missing > 0 ? `${missing} of them were gone already` : `${-missing} more carry its run key`}` : ''}); ` +
            `recorded as revert ${outcome.revertId} at ${outcome.revertedAt.toISOString()}. "report-etl replay ${claim.run_key}${opts.job ? ` --job ${claim.job}` : ''}" appends it again`,
        );
      } finally {
        await pool.end().catch(() => undefined);
        logger.flush();
      }
    });
};
