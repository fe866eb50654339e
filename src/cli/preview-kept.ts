/**
 * `report-etl preview --from-pages <run-key | attempt-id> [--job J] [--rows N]` (docs/operations.md "Kept pages"):
 * what `report-etl preview` shows, from the pages a run kept (target.archive) instead of a new rendering, with no
 * request to the server (pipeline/preview-kept.ts). A run key names the run's newest complete kept pages, an attempt
 * id that attempt's; documents (pdf, excel, word) a load committed count as kept pages, as in `report-etl pages`, and
 * are read from their target. Exit 1 when there are none, they are damaged or the database failed, 2 when the id
 * names nothing or runs of several jobs, or the job is no longer in jobs.yaml.
 */
import { EtlError } from '../errors.ts';
import type { LogFormatFlag } from './options.ts';
import type { JobPreview } from '../pipeline/preview.ts';
import type { Cli } from './types.ts';

/** The options of `preview --from-pages`. */
export interface KeptPreviewFlags extends LogFormatFlag {
  config: string;
  rows: number;
  job?: string | undefined;
  /** Refused: the kept pages were rendered with the run's parameters and logical time. */
  param?: Record<string, string> | undefined;
  logicalTime?: string | undefined;
}

/**
 * Previews the kept pages `id` names.
 * @param printPreview how `preview` prints a preview (cli/preview.ts), for the same lines
 * @throws ConfigError when jobs.yaml cannot be used or the run's job in it is invalid (the caller's exit 2)
 */
export async function previewKeptPagesCommand(
  cli: Cli,
  id: string,
  opts: KeptPreviewFlags,
  printPreview: (cli: Cli, job: string, p: JobPreview, rowsWanted: number) => void,
): Promise<void> {
  if (Object.keys(opts.param ?? {}).length > 0 || opts.logicalTime !== undefined) {
    cli.err(
      'report-etl preview: -p and --logical-time do not go with --from-pages: the kept pages were rendered with ' +
        "the run's parameters and logical time (preview the job from the server to try others)",
    );
    cli.exit(2);
    return;
  }
  // Loaded here: `--help` and the other commands need none of it (start-up cost).
  const [
    { openStores },
    { resolveJob },
    { jobOfSubject, parseSubject },
    { makeLogger },
    { loadConfigForJob },
    { namedRunOrExit, keptOfNamed, namedWhat },
    { previewKeptPages },
    { getAttempt },
  ] = await Promise.all([
    import('../app/bootstrap.ts'),
    import('../config/load.ts'),
    import('../config/mandants.ts'),
    import('../logger.ts'),
    import('./job-config.ts'),
    import('./named-run.ts'),
    import('../pipeline/preview-kept.ts'),
    import('../history/attempts.ts'),
  ]);
  const logger = makeLogger({}, opts.logFormat);
  const { pool, releasers } = await openStores(logger, { poolMax: 2 });
  try {
    const named = await namedRunOrExit(cli, pool, id, opts.job);
    if (named === undefined) return;
    const { run } = named;
    const loaded = await loadConfigForJob(cli, opts.config, parseSubject(run.job).job);
    if (!jobOfSubject(loaded.config, run.job)) {
      cli.err(`error: run ${run.run_key} is of job ${run.job}, which is no longer in ${opts.config}: add it back`);
      cli.exit(2);
      return;
    }
    const job = resolveJob(loaded.config, run.job, opts.config);
    const kept = await keptOfNamed(pool, named);
    const documents = 'documents' in kept ? kept.documents : undefined;
    const archive = 'archive' in kept ? kept.archive : undefined;
    const loader = documents ? await getAttempt(pool, documents.attemptId) : undefined;
    if (!loader && !archive?.complete) {
      cli.err(
        `${run.job}: ${namedWhat(named)} kept no complete pages (target.archive off, its reading stopped early, ` +
          'or keepDays ran out): preview the job from the server (report-etl preview <job>)',
      );
      cli.exit(1);
      return;
    }
    try {
      const preview = await previewKeptPages({
        job,
        kept: documents ?? archive!,
        interval: {
          logicalStart: run.logical_start ?? undefined,
          logicalEnd: run.logical_end ?? run.scheduled_for ?? undefined,
        },
        rows: opts.rows,
        pool,
        logger,
      });
      cli.out(
        loader
          ? `${run.job}: the documents attempt ${loader.attempt} (${loader.attempt_id}) of run ${run.run_key} ` +
              `loaded into ${documents!.docs[0]!.targetTable}, with no request to the server`
          : `${run.job}: the pages attempt ${archive!.attempt} (${archive!.attemptId}) of run ${run.run_key} kept, ` +
              'with no request to the server',
      );
      printPreview(cli, run.job, preview, opts.rows);
    } catch (err) {
      if (!(err instanceof EtlError) || err.code === 'CONFIG_INVALID') throw err;
      cli.err(`${run.job}: preview failed (${err.code}): ${err.message}`);
      cli.exit(1);
    }
  } finally {
    await releasers.releaseAll().catch(() => undefined);
    logger.flush();
  }
}
