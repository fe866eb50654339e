/**
 * `report-etl replay <run-id>` and `report-etl replay --failed [--job J] [--since 2d]`: re-queue failed runs as
 * the same logical run (see src/queue/replay.ts). Exit 2 when the run id is unknown or not replayable.
 */
import type { RegisterCommand } from './index.ts';
import { loadConfig } from '../config/load.ts';
import type { EtlConfig } from '../config/schema.ts';
import { EtlError } from '../errors.ts';
import { replayFailed, replayRun } from '../queue/replay.ts';
import { parseSince, queueOptions, withQueueSession } from './queue-session.ts';

export const registerReplay: RegisterCommand = (program, cli) => {
  queueOptions(program.command('replay').description('re-queue a failed run (same logical run), or every failed run with --failed'), true)
    .argument('[run-id]', 'etl.runs.run_id of the failed attempt')
    .option('--failed', 'replay every logical run whose newest attempt failed')
    .option('--job <job>', 'with --failed: only this job')
    .option('--since <when>', 'with --failed: only runs started since (30m, 12h, 2d, or a date)')
    .action(async (runId: string | undefined, opts: { config: string; queuePrefix: string; failed?: boolean; job?: string; since?: string }) => {
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
        const since = parseSince(opts.since);
        const ids = await replayFailed(deps, { ...(opts.job ? { job: opts.job } : {}), ...(since ? { since } : {}) });
        for (const id of ids) cli.out(`replay queued as ${id}`);
        cli.out(`${ids.length} failed run${ids.length === 1 ? '' : 's'} queued again`);
      });
    });
};
