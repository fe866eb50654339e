/**
 * `report-etl replay <run-key | attempt-id> [--job J] [--accept-guard] [--from-pages]` and `report-etl replay --failed
 * [--job J] [--since 2d] [--dry-run] [--include-superseded]` (docs/operations.md "Replaying failed runs", "Kept pages";
 * queue/replay.ts). Exit 2 when the id names nothing or several jobs' runs, or the run is not replayable.
 */
import { fail, type Cli, type RegisterCommand } from './types.ts';
import { textTable } from './text-table.ts';
import type { EtlConfig } from '../config/schema.ts';
import { formatTime } from '../time-text.ts';
import { EtlError } from '../errors.ts';
import type { FailedRunToReplay } from '../history/run-list.ts';
import type { RunQueue } from '../queue/queue.ts';
import { configOption, mandantOption, queuePrefixOption, sinceOption } from './options.ts';
import { withQueueSession } from './stores.ts';
import { chooseSubjects } from '../config/mandants.ts';
import { zonesOf } from './job-zones.ts';

const HEADERS = ['run key', 'job', 'failed attempt', 'started', 'error'] as const;

/**
 * Failed runs as an indented table: run key, job, failed attempt, its start (time-text.ts, in the job's zone from
 * `config` when known) and first error line.
 */
function formatFailedRuns(
  runs: FailedRunToReplay[],
  config: EtlConfig | undefined,
  extra?: (r: FailedRunToReplay) => string,
): string[] {
  const zoneOf = zonesOf(config);
  const cells = runs.map((r) => [
    r.run_key,
    r.job,
    r.attempt_id,
    formatTime(r.started_at, zoneOf(r.job)),
    (r.error_first_line ?? '') + (extra ? extra(r) : ''),
  ]);
  return textTable(HEADERS, cells).map((l) => `  ${l}`);
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * Says when no worker takes runs now, so that "queued" is not read as "running"; silent when the count cannot be
 * read (a Redis that refuses CLIENT LIST).
 */
async function sayWhenNoWorker(queue: RunQueue, prefix: string, cli: Cli): Promise<void> {
  const workers = await queue.getWorkersCount().catch(() => undefined);
  if (workers === 0)
    cli.err(
      `note: no worker is taking runs from queue prefix "${prefix}" now: the replay runs once one starts (npx ` +
        'report-etl worker, or start)',
    );
}

export const registerReplay: RegisterCommand = (program, cli) => {
  const cmd = program
    .command('replay')
    .description('re-queue a failed run (same logical run), or every failed run with --failed');
  mandantOption(sinceOption(queuePrefixOption(configOption(cmd)), 'with --failed: only runs started since'))
    .argument(
      '[run-key|attempt-id]',
      'the failed run: its run key (etl.runs.run_key), or the id of one of its attempts (etl.attempts.attempt_id)',
    )
    .option('--failed', 'replay every logical run whose newest attempt failed, except superseded ones')
    .option(
      '--job <job>',
      'with --failed: only this job; with a run key: the job it is of, when run keys of several jobs match',
    )
    .option('--dry-run', 'with --failed: list what would be queued (and what is skipped), queue nothing')
    .option(
      '--accept-guard',
      "with a run key: load the run even where its target's guard (target.guard) would stop it; recorded in the run " +
        'history',
    )
    .option(
      '--from-pages',
      'with a run key: load the pages the run kept (target.archive) instead of asking the server again',
    )
    .option(
      '--include-superseded',
      'with --failed: replay failures a later successful run of the same replace/merge target superseded, too',
    )
    .action(
      async (
        id: string | undefined,
        opts: {
          config: string;
          queuePrefix: string;
          failed?: boolean;
          job?: string;
          since?: Date;
          dryRun?: boolean;
          includeSuperseded?: boolean;
          acceptGuard?: boolean;
          fromPages?: boolean;
          mandant?: string[];
        },
      ) => {
        // Loaded here: `--help` and the other commands need neither BullMQ nor the config parser (start-up cost).
        const [{ loadConfig }, { planFailedReplays, replayRun }, { describeNamed, namedRunOrExit }] = await Promise.all(
          [import('../config/load.ts'), import('../queue/replay.ts'), import('./named-run.ts')],
        );
        const usage =
          !id === !opts.failed
            ? 'give either a run key or attempt id, or --failed'
            : !id && opts.acceptGuard
              ? '--accept-guard goes with one run key or attempt id: accept a guard run by run, after looking at ' +
                'what it stopped'
              : !id && opts.fromPages
                ? '--from-pages goes with one run key or attempt id'
                : id && (opts.dryRun || opts.includeSuperseded)
                  ? '--dry-run and --include-superseded go with --failed'
                  : opts.mandant && !opts.job
                    ? '--mandant goes with --job, the job whose mandants it chooses'
                    : undefined;
        if (usage) return fail(cli, `report-etl replay: ${usage}`);
        // The config gives the job's attempts and backoff; a replay still works when jobs.yaml is unreadable.
        const config: EtlConfig | undefined = await loadConfig(opts.config, process.env, { isolate: true }).then(
          (c) => c.config,
          () => undefined,
        );
        // A job with a list of mandants stands for its mandants' runs (docs/loaded-tables.md "Many mandants").
        const listJob = opts.job && config?.jobs[opts.job];
        let jobs: (string | undefined)[] = [opts.job];
        try {
          if (opts.job && listJob) jobs = chooseSubjects(opts.job, listJob, opts.mandant).map((s) => s.name);
          else if (opts.mandant) throw new EtlError('CONFIG_INVALID', `--mandant: job ${opts.job} is not in jobs.yaml`);
        } catch (err) {
          return fail(cli, `report-etl replay: ${(err as Error).message}`);
        }
        await withQueueSession(opts.queuePrefix, async ({ pool, queue }) => {
          const deps = { pool, queue, ...(config ? { config } : {}) };
          if (id) {
            const named = await namedRunOrExit(
              cli,
              pool,
              id,
              jobs.length === 1 ? jobs[0] : undefined,
              'replay',
              opts.job,
            );
            if (!named) return;
            try {
              const { jobId, attemptId, reverted, pagesOf } = await replayRun(
                deps,
                { job: named.run.job, runKey: named.run.run_key },
                { acceptGuard: opts.acceptGuard === true, fromPages: opts.fromPages === true },
              );
              const after =
                named.kind === 'attempt' && named.attempt.attempt_id === attemptId
                  ? ''
                  : `, after its ${reverted ? 'reverted' : 'failed'} attempt ${attemptId}`;
              const guard = opts.acceptGuard ? ", past its target's guard" : '';
              cli.out(`${describeNamed(named)}: replay of the run queued as ${jobId}${after}${guard}`);
              if (pagesOf)
                cli.out(
                  `it loads the pages attempt ${pagesOf.attempt} (${pagesOf.attemptId}) kept, without asking the ` +
                    `server${opts.fromPages ? '' : ': exactly the pages its guard stopped'}`,
                );
              else if (opts.acceptGuard)
                cli.out('the tripped attempt kept no pages (target.archive): the replay runs the report again');
              await sayWhenNoWorker(queue, opts.queuePrefix, cli);
            } catch (err) {
              if (!(err instanceof EtlError)) throw err;
              fail(cli, `report-etl replay: ${err.message}`);
            }
            return;
          }
          const plan = { toQueue: [], superseded: [], stillRetrying: [], jobGone: [] } as Awaited<
            ReturnType<typeof planFailedReplays>
          >;
          for (const job of jobs) {
            const one = await planFailedReplays(deps, {
              job,
              since: opts.since,
              includeSuperseded: opts.includeSuperseded,
            });
            for (const k of ['toQueue', 'superseded', 'stillRetrying', 'jobGone'] as const) plan[k].push(...one[k]);
          }
          const supersededBy = (r: FailedRunToReplay) =>
            r.superseded_by_run_key ? `  [superseded by ${r.superseded_by_run_key}]` : '';
          if (opts.dryRun) {
            const n = plan.toQueue.length;
            cli.out(`dry run, nothing queued: would queue ${plural(n, 'failed run')}${n ? ':' : ''}`);
            if (n) for (const l of formatFailedRuns(plan.toQueue, config, supersededBy)) cli.out(l);
          } else {
            for (const run of plan.toQueue) {
              const { jobId } = await replayRun(deps, { job: run.job, runKey: run.run_key });
              cli.out(`replay queued as ${jobId}`);
            }
            cli.out(`${plural(plan.toQueue.length, 'failed run')} queued again`);
            if (plan.toQueue.length) await sayWhenNoWorker(queue, opts.queuePrefix, cli);
          }
          const skipped = (runs: FailedRunToReplay[], what: string, why: string, superseded = false) => {
            if (!runs.length) return;
            cli.out(`skipped ${plural(runs.length, what)}${why}`);
            for (const l of formatFailedRuns(runs, config, superseded ? supersededBy : undefined)) cli.out(l);
          };
          skipped(
            plan.superseded,
            'superseded failed run',
            ': a later logical run of the same job succeeded into the same replace/merge target, so a replay ' +
              'would overwrite its newer rows with older ones (--include-superseded replays them anyway):',
            true,
          );
          skipped(plan.stillRetrying, 'failed run', ' the queue still retries (waiting, delayed or active):');
          skipped(plan.jobGone, 'failed run', ' of jobs no longer in jobs.yaml (add a job back to replay its runs):');
        });
      },
    );
};
