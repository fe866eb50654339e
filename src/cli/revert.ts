/**
 * `report-etl revert <run-key | attempt-id> [--job J]` (README "Commands"): removes one append run's rows and claim
 * (warehouse/revert.ts) and prints what it removed. Exit 2 when the id names nothing or several jobs' runs, or the
 * run cannot be reverted, with the reason.
 */
import { hostname, userInfo } from 'node:os';
import { shellQuote } from '../shell-quote.ts';
import { configGiven, jobZones } from './job-zones.ts';
import { configOption } from './options.ts';
import { withPool } from './stores.ts';
import { fail, type RegisterCommand } from './types.ts';

/** `user@host` of this process (the host alone when the user has no name here). */
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
  const cmd = program.command('revert <run-key|attempt-id>');
  configOption(cmd, "jobs.yaml, read for the job's time zone only");
  cmd
    .description(
      "remove one append run's rows from its target, so that a replay can append it again; give its run key, or an " +
        'attempt id',
    )
    .option('--job <job>', 'the job the run key is of, when run keys of several jobs match')
    .action(async (id: string, opts: { job?: string; config: string }) => {
      // Loaded here: `--help` and the other commands need none of it (start-up cost).
      const [{ migrate }, { describeNamed, namedRunOrExit }, { revertAppendedRun }, time] = await Promise.all([
        import('../history/migrate.ts'),
        import('./named-run.ts'),
        import('../warehouse/revert.ts'),
        import('../time-text.ts'),
      ]);
      const zoneOf = await jobZones(cli, opts.config, configGiven(cmd));
      await withPool(async (pool, logger) => {
        await migrate(pool, logger);
        const named = await namedRunOrExit(cli, pool, id, opts.job, 'revert');
        if (!named) return;
        const at = (t: Date) => time.formatTime(t, zoneOf(named.run.job));
        const outcome = await revertAppendedRun(pool, named.run.job, named.run.run_key, whoAmI(), at);
        if (outcome.kind === 'refused')
          return fail(cli, `report-etl revert: ${describeNamed(named)}: not reverted: ${outcome.message}`);
        const { claim, rows } = outcome;
        const missing = Number(claim.rows) - rows;
        const differs =
          missing === 0
            ? ''
            : `; the run had appended ${claim.rows}, ` +
              (missing > 0 ? `${missing} of them were gone already` : `${-missing} more carry its run key`);
        const job = opts.job ? ` --job ${shellQuote(claim.job)}` : '';
        const replay = `report-etl replay ${shellQuote(claim.run_key)}${job}`;
        cli.out(
          `${describeNamed(named)}: reverted: removed ${rows} row${rows === 1 ? '' : 's'} from ${claim.target_table} ` +
            `(appended by attempt ${claim.attempt_id} at ${at(claim.committed_at)}${differs}); ` +
            `recorded as revert ${outcome.revertId} at ${at(outcome.revertedAt)}. ` +
            `"${replay}" appends it again`,
        );
      });
    });
};
