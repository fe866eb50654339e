/** `report-etl enqueue <job> [--param K=V]`: queues a manual run (see src/queue/manual-run.ts). */
import type { RegisterCommand } from './types.ts';
import { configOption, paramOption, queuePrefixOption } from './options.ts';
import { withQueueSession } from './queue-session.ts';

export const registerEnqueue: RegisterCommand = (program, cli) => {
  paramOption(queuePrefixOption(configOption(program.command('enqueue').description('queue a manual run of a job; a worker runs it'))))
    .argument('<job>', 'job name in jobs.yaml')
    .action(async (job: string, opts: { config: string; queuePrefix: string; param: Record<string, string> }) => {
      const [{ loadConfigForJob }, { enqueueManual }] = await Promise.all([import('./job-config.ts'), import('../queue/manual-run.ts')]);
      const { config } = await loadConfigForJob(cli, opts.config, job);
      const { jobId, runKey } = await withQueueSession(opts.queuePrefix, ({ queue }) => enqueueManual(queue, config, job, opts.param));
      cli.out(`${job}: queued as ${jobId} (run key ${runKey})`);
    });
};
