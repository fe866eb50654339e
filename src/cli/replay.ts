/**
 * `report-etl replay <run-id>` and `report-etl replay --failed [--job J] [--since 2d]`: re-queue failed runs as
 * the same logical run (see src/queue/replay.ts). Exit 2 when the run id is unknown or not replayable.
 */
import type { RegisterCommand } from './types.ts';
import { loadConfig } from '../config/load.ts';
import type { EtlConfig } from '../config/schema.ts';
import { EtlError } from '../errors.ts';
import { replayFailed, replayRun } from '../queue/replay.ts';
import { configOption, queuePrefixOption, sinceOption } from './options.ts';
import { withQueueSession } from './queue-session.ts';

export const registerReplay: RegisterCommand = (program, cli) => {
  sinceOption(
    queuePrefixOption(configOption(program.command('replay').description('re-queue a failed run (same logical run), or every failed run with --failed'))),
    'with --failed: only runs started since',
  )
    .argument('[run-id]', 'etl.runs.run_id of the failed attempt')
    .option('--failed', 'replay every logical run whose newest attempt failed')
    .option('--job <job>', 'with --failed: only this job')
    .action(async (runId: string | undefined, opts: { config: string; queuePrefix: string; failed?: boolean; job?: string; since?: Date }) => {
      if (!runId === !opts.failed) {
        cli.err('report-etl replay: give either a run id or --failed');
        cli.exit(2);
        return;
      }
      // The config gives the job's attempts and backoff; a replay still works when jobs.yaml is unreadable.
      const config: EtlConfig | undefined = await loadConfig(opts.config).then((c) => c.config, () => undefined);
      await withQueueSession(opts.queuePrefix, async ({ pool, queue }) => {
        const deps = { pool, queue, ...(config ? { config } : {}) };
        if (runId) {
          try {
            const { jobId } = await replayRun(deps, runId);
            cli.out(`run ${runId}: replay queued as ${jobId}`);
          } catch (err) {
            if (!(err instanceof EtlError)) throw err;
            cli.err(`report-etl replay: ${err.message}`);
            cli.exit(2);
          }
          return;
        }
        const ids = await replayFailed(deps, { ...(opts.job ? { job: opts.job } : {}), ...(opts.since ? { since: opts.since } : {}) });
        for (const id of ids) cli.out(`replay queued as ${id}`);
        cli.out(`${ids.length} failed run${ids.length === 1 ? '' : 's'} queued again`);
      });
    });
};
