/**
 * `report-etl preview <job> [-p NAME=VALUE] [--rows N]`: what the job would load, before a first load (see
 * src/pipeline/preview.ts). Prints the target columns with their types and where each type comes from, then the
 * first rows as a table. Loads nothing, records no run, deletes the report job. Exit 0 ok, 1 the report or the
 * database failed, 2 usage or config error.
 */
import { EtlError } from '../errors.ts';
import type { JobPreview } from '../pipeline/preview.ts';
import {
  configOption,
  logFormatOption,
  logicalTimeOption,
  paramOption,
  wholeNumber,
  type LogFormatFlag,
} from './options.ts';
import type { Cli, RegisterCommand } from './types.ts';
import { textTable } from './text-table.ts';

/** Widest value shown in a cell, in characters (longer ones end in …). */
const CELL_MAX = 40;

/**
 * A value as one line of a preview table: NULL for null, line breaks and tabs shown as ⏎ and →, cut to
 * {@link CELL_MAX} characters (code points, so an emoji is never split) ending in ….
 */
export function cell(v: string | null): string {
  if (v === null) return 'NULL';
  const flat = v.replace(/\r?\n/g, '⏎').replace(/\t/g, '→');
  // Cut by characters (code points), never inside a surrogate pair.
  const chars = Array.from(flat);
  return chars.length > CELL_MAX ? `${chars.slice(0, CELL_MAX - 1).join('')}…` : flat;
}

/** Prints a preview for a person. */
export function printPreview(cli: Cli, job: string, p: JobPreview, rowsWanted: number): void {
  if (!p.result) {
    cli.out(
      `${job}: the report has no rows and no columns (rows=${p.reportRows}); a load would leave ${p.targetTable} as it is (replace empties it)`,
    );
    return;
  }
  const { columns, rows, misfits } = p.result;
  const shaped = columns.some((c) => c.source === 'fixed');
  const unit = !shaped
    ? ''
    : columns.some((c) => c.type === 'bytea')
      ? 'documents (one per page)'
      : columns.some((c) => c.name === 'line')
        ? 'lines'
        : 'documents (one per page)';
  const of = shaped
    ? `of a report with ${p.reportRows.toLocaleString('en-US')} rows`
    : `of ${p.reportRows.toLocaleString('en-US')} rows`;
  cli.out(`${job}: first ${rows.length}${unit ? ` ${unit}` : ''} ${of}, into ${p.targetTable} — nothing was loaded`);
  cli.out('');
  for (const l of textTable(
    ['column', 'type', 'from', 'report column'],
    columns.map((c) => [c.name, c.type, c.source, c.reportName]),
  ))
    cli.out(l);
  cli.out('');
  for (const l of textTable(
    columns.map((c) => c.name),
    rows.map((r) => r.map(cell)),
  ))
    cli.out(l);
  if (!shaped && rows.length < rowsWanted && p.reportRows > rows.length)
    cli.out(`(the first page had ${rows.length} rows)`);
  if (columns.some((c) => c.source === 'inferred'))
    cli.out(
      '\ninferred types come from these rows only; a load infers them from every row (declare a type under target.columns to fix it)',
    );
  for (const m of misfits)
    cli.err(
      `warning: row ${m.row}, column ${m.column}: "${cell(m.value)}" does not fit ${columns.find((c) => c.name === m.column)?.type}: a load of this row would fail`,
    );
}

export const registerPreview: RegisterCommand = (program, cli) => {
  logicalTimeOption(
    logFormatOption(
      paramOption(
        configOption(
          program
            .command('preview')
            .description('show what a job would load (columns, types, first rows) without loading anything'),
        ),
      ),
    ),
  )
    .argument('<job>', 'job name in jobs.yaml')
    .option('--rows <n>', 'rows to show (1-1000)', wholeNumber(1), 10)
    .action(
      async (
        jobName: string,
        opts: { config: string; param: Record<string, string>; rows: number; logicalTime?: string } & LogFormatFlag,
      ) => {
        // Loaded here, not at the top: `--help` and the other commands need none of it (start-up cost).
        const [{ openStores }, { resolveJob }, { makeLogger }, { previewJob }, { loadConfigForJob }] =
          await Promise.all([
            import('../app/bootstrap.ts'),
            import('../config/load.ts'),
            import('../logger.ts'),
            import('../pipeline/preview.ts'),
            import('./job-config.ts'),
          ]);
        const loaded = await loadConfigForJob(cli, opts.config, jobName);
        const job = resolveJob(loaded.config, jobName, opts.config);
        const logger = makeLogger({}, opts.logFormat);
        const controller = new AbortController();
        const onSignal = () => controller.abort(new Error('interrupted'));
        process.once('SIGINT', onSignal);
        try {
          const { pool, redis, releasers } = await openStores(logger, { poolMax: 2 });
          try {
            const { queuePrefixFromEnv } = await import('../queue/names.ts');
            const { parseZonedDate } = await import('../pipeline/logical-time.ts');
            const logicalEnd = opts.logicalTime ? parseZonedDate(opts.logicalTime, job.zone) : undefined;
            const preview = await previewJob({
              job,
              parameters: opts.param,
              rows: Math.min(opts.rows, 1000),
              pool,
              redis,
              logger,
              signal: controller.signal,
              prefix: queuePrefixFromEnv(),
              logicalEnd,
            });
            printPreview(cli, jobName, preview, opts.rows);
          } catch (err) {
            if (!(err instanceof EtlError) || err.code === 'CONFIG_INVALID') throw err;
            cli.err(
              `${jobName}: preview failed (${err.code}): ${err.message}${err.serverMessage && !err.message.includes(err.serverMessage) ? `\n${err.serverMessage}` : ''}`,
            );
            cli.exit(err.code === 'REPORT_NAME_INVALID' ? 2 : 1);
          } finally {
            await releasers.releaseAll().catch(() => undefined);
          }
        } finally {
          process.off('SIGINT', onSignal);
          logger.flush();
        }
      },
    );
};
