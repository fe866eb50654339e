/**
 * `report-etl enqueue <job> [--param K=V] [--mandant N]`: queues a manual run (queue/manual-run.ts); for a job with a
 * list of mandants one run per mandant (docs/loaded-tables.md "Many mandants").
 */
import type { RegisterCommand } from './types.ts';
import { configOption, logicalTimeOption, mandantOption, paramOption, queuePrefixOption } from './options.ts';
import { withQueueSession } from './stores.ts';
import { chooseSubjects } from '../config/mandants.ts';
import { describeInterval, parseZonedDate } from '../pipeline/logical-time.ts';
import { formatTime } from '../time-text.ts';

export const registerEnqueue: RegisterCommand = (program, cli) => {
  const cmd = program.command('enqueue').description('queue a manual run of a job; a worker runs it');
  for (const add of [configOption, queuePrefixOption, paramOption, logicalTimeOption, mandantOption]) add(cmd);
  cmd.argument('<job>', 'job name in jobs.yaml').action(
    async (
      job: string,
      opts: {
        config: string;
        queuePrefix: string;
        param: Record<string, string>;
        logicalTime?: string;
        mandant?: string[];
      },
    ) => {
      // Loaded here: `--help` and the other commands need neither BullMQ nor the config parser (start-up cost).
      const [{ loadConfigForJob }, { enqueueManual }, { resolveJob }] = await Promise.all([
        import('./job-config.ts'),
        import('../queue/manual-run.ts'),
        import('../config/load.ts'),
      ]);
      const { config } = await loadConfigForJob(cli, opts.config, job);
      const resolved = resolveJob(config, job);
      const subjects = chooseSubjects(job, resolved.job, opts.mandant);
      const chosen = opts.logicalTime ? parseZonedDate(opts.logicalTime, resolved.zone) : undefined;
      const queued = await withQueueSession(opts.queuePrefix, async ({ queue, pool }) => {
        const out = [];
        for (const s of subjects)
          out.push({
            name: s.name,
            ...(await enqueueManual(queue, config, s.name, opts.param, chosen, undefined, pool)),
          });
        return out;
      });
      const at = (t: Date) => formatTime(t, resolved.zone);
      for (const { name, jobId, runKey, interval } of queued) {
        const stands =
          resolved.job.schedule || chosen ? `, ${describeInterval(resolved, interval, chosen !== undefined, at)}` : '';
        cli.out(`${name}: queued as ${jobId} (run key ${runKey})${stands}`);
      }
    },
  );
};
