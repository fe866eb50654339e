/** `report-etl enqueue <job> [--param K=V]`: queues a manual run (queue/manual-run.ts). */
import type { RegisterCommand } from './types.ts';
import { configOption, logicalTimeOption, paramOption, queuePrefixOption } from './options.ts';
import { withQueueSession } from './queue-session.ts';

export const registerEnqueue: RegisterCommand = (program, cli) => {
  const cmd = program.command('enqueue').description('queue a manual run of a job; a worker runs it');
  for (const add of [configOption, queuePrefixOption, paramOption, logicalTimeOption]) add(cmd);
  cmd
    .argument('<job>', 'job name in jobs.yaml')
    .action(
      async (
        job: string,
        opts: { config: string; queuePrefix: string; param: Record<string, string>; logicalTime?: string },
      ) => {
        const [{ loadConfigForJob }, { enqueueManual }, { resolveJob }, { parseZonedDate }] = await Promise.all([
          import('./job-config.ts'),
          import('../queue/manual-run.ts'),
          import('../config/load.ts'),
          import('../pipeline/logical-time.ts'),
        ]);
        const { config } = await loadConfigForJob(cli, opts.config, job);
        const at = opts.logicalTime ? parseZonedDate(opts.logicalTime, resolveJob(config, job).zone) : new Date();
        const { jobId, runKey } = await withQueueSession(opts.queuePrefix, ({ queue }) =>
          enqueueManual(queue, config, job, opts.param, at),
        );
        cli.out(`${job}: queued as ${jobId} (run key ${runKey})`);
      },
    );
};
