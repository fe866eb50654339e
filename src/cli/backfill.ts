/** `report-etl backfill <job> --from <date> --to <date>`: one run per schedule interval (see src/queue/backfill.ts). */
import type { RegisterCommand } from './types.ts';
import { resolveJob, loadConfig } from '../config/load.ts';
import { backfill } from '../queue/backfill.ts';
import { parseZonedDate } from '../pipeline/logical-time.ts';
import { configOption, queuePrefixOption } from './options.ts';
import { withQueueSession } from './queue-session.ts';

export const registerBackfill: RegisterCommand = (program, cli) => {
  queuePrefixOption(configOption(program.command('backfill').description('queue one run per schedule tick t with from < t <= to, each with its own logical time')))
    .argument('<job>', 'job name in jobs.yaml (needs a schedule)')
    .requiredOption('--from <date>', "start, exclusive: 2026-01-01 (midnight in the job's time zone), 2026-01-01T06:00, or ISO with offset")
    .requiredOption('--to <date>', 'end, inclusive, same forms')
    .action(async (job: string, opts: { config: string; queuePrefix: string; from: string; to: string }) => {
      const { config } = await loadConfig(opts.config);
      const r = resolveJob(config, job);
      const zone = r.zone;
      const from = parseZonedDate(opts.from, zone);
      const to = parseZonedDate(opts.to, zone);
      const { runs } = await withQueueSession(opts.queuePrefix, ({ queue }) => backfill({ queue, config }, job, from, to));
      for (const run of runs) cli.out(`${run.tick.toISOString()}  ${run.jobId}  ${run.added ? 'queued' : 'already queued'}`);
      cli.out(`${job}: ${runs.filter((x) => x.added).length} of ${runs.length} runs queued`);
    });
};
