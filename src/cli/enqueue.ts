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
        const [{ loadConfigForJob }, { enqueueManual }, { resolveJob }, { parseZonedDate, describeInterval }, time] =
          await Promise.all([
            import('./job-config.ts'),
            import('../queue/manual-run.ts'),
            import('../config/load.ts'),
            import('../pipeline/logical-time.ts'),
            import('../time-text.ts'),
          ]);
        const { config } = await loadConfigForJob(cli, opts.config, job);
        const resolved = resolveJob(config, job);
        const chosen = opts.logicalTime ? parseZonedDate(opts.logicalTime, resolved.zone) : undefined;
        const { jobId, runKey, interval } = await withQueueSession(opts.queuePrefix, ({ queue, pool }) =>
          enqueueManual(queue, config, job, opts.param, chosen, undefined, pool),
        );
        const at = (t: Date) => time.formatTime(t, resolved.zone);
        const stands =
          resolved.job.schedule || chosen ? `, ${describeInterval(resolved, interval, chosen !== undefined, at)}` : '';
        cli.out(`${job}: queued as ${jobId} (run key ${runKey})${stands}`);
      },
    );
};
