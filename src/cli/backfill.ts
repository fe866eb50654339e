/**
 * `report-etl backfill <job> --from <date> --to <date> [--force]`: one run per schedule interval (queue/backfill.ts),
 * each tick printed in UTC and in the job's zone, with its queue job id and what happened to it; for a job with a list
 * of mandants, the ticks of each mandant (`--mandant` to choose; docs/loaded-tables.md "Many mandants").
 */
import type { RegisterCommand } from './types.ts';
import type { BackfillRun } from '../queue/backfill.ts';
import { parseZonedDate } from '../pipeline/logical-time.ts';
import { formatTime } from '../time-text.ts';
import { chooseSubjects } from '../config/mandants.ts';
import { configOption, mandantOption, queuePrefixOption } from './options.ts';
import { withQueueSession } from './stores.ts';

function outcome(run: BackfillRun, force: boolean, done: boolean): string {
  if (run.added) return force ? 'queued (forced: new logical run)' : 'queued';
  return `${done ? 'already done' : 'already queued'} (${run.state})`;
}

export const registerBackfill: RegisterCommand = (program, cli) => {
  const cmd = program
    .command('backfill')
    .description('queue one run per schedule tick t with from < t <= to, each with its own logical time');
  mandantOption(queuePrefixOption(configOption(cmd)))
    .argument('<job>', 'job name in jobs.yaml (needs a schedule)')
    .requiredOption(
      '--from <date>',
      "start, exclusive: 2026-01-01 (midnight in the job's time zone), 2026-01-01T06:00, or ISO with offset",
    )
    .requiredOption('--to <date>', 'end, inclusive, same forms')
    .option(
      '--force',
      'queue every tick as a new logical run, also ticks already queued or done (an append target gets their rows ' +
        'again)',
    )
    .action(
      async (
        job: string,
        opts: { config: string; queuePrefix: string; from: string; to: string; force?: boolean; mandant?: string[] },
      ) => {
        // Loaded here: `--help` and the other commands need neither BullMQ nor the config parser (start-up cost).
        const [{ resolveJob }, { loadConfigForJob }, { backfill, isDoneState }] = await Promise.all([
          import('../config/load.ts'),
          import('./job-config.ts'),
          import('../queue/backfill.ts'),
        ]);
        const { config } = await loadConfigForJob(cli, opts.config, job);
        const resolved = resolveJob(config, job);
        const subjects = chooseSubjects(job, resolved.job, opts.mandant);
        const zone = resolved.zone;
        const from = parseZonedDate(opts.from, zone);
        const to = parseZonedDate(opts.to, zone);
        const force = opts.force === true;
        const runs = await withQueueSession(opts.queuePrefix, async ({ queue, pool }) => {
          const out: BackfillRun[] = [];
          for (const s of subjects)
            out.push(...(await backfill({ queue, config, history: pool }, s.name, from, to, { force })).runs);
          return out;
        });
        for (const run of runs) {
          const what = outcome(run, force, isDoneState(run.state));
          cli.out(`${formatTime(run.tick, zone)}  ${run.jobId}  ${what}`);
        }
        const added = runs.filter((x) => x.added).length;
        const done = runs.filter((x) => !x.added && isDoneState(x.state)).length;
        const pending = runs.length - added - done;
        let summary = `${job}: ${added} of ${runs.length} runs queued`;
        if (force && added) summary += " as new logical runs (--force: append targets get these ticks' rows again)";
        if (pending) summary += `; ${pending} already queued (a worker runs them)`;
        if (done)
          summary +=
            `; ${done} already done (a tick's queue id is kept for 7 days after it ran, so it is not queued again): ` +
            'pass --force to run them again as new logical runs';
        cli.out(summary);
      },
    );
};
