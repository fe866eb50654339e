/**
 * `report-etl preview <job> [-p NAME=VALUE] [--rows N]` (pipeline/preview.ts): the target columns with their types
 * and where each comes from, then the first rows. Loads nothing, records no run. Exit 0 ok, 1 the report or the
 * database failed, 2 usage or config error.
 */
import { chooseSubjects } from '../config/mandants.ts';
import { EtlError } from '../errors.ts';
import { describeInterval, manualInterval, parseZonedDate } from '../pipeline/logical-time.ts';
import { queuePrefixFromEnv } from '../queue/names.ts';
import { formatTime } from '../time-text.ts';
import type { JobPreview } from '../pipeline/preview.ts';
import { describeRange } from '../warehouse/replace-range.ts';
import { manualRunOptions, wholeNumber, type ManualRunFlags } from './options.ts';
import { withStores } from './stores.ts';
import { fail, type Cli, type RegisterCommand } from './types.ts';
import { textTable } from './text-table.ts';

/** Widest value shown in a cell, in characters. */
const CELL_MAX = 40;

/** A value as one line of a table: NULL, line breaks and tabs as ⏎ and →, cut by code points ending in …. */
export function cell(v: string | null): string {
  if (v === null) return 'NULL';
  const chars = Array.from(v.replace(/\r?\n/g, '⏎').replace(/\t/g, '→'));
  return chars.length > CELL_MAX ? `${chars.slice(0, CELL_MAX - 1).join('')}…` : chars.join('');
}

/** Prints a preview for a person (also `preview --from-pages`, cli/preview-kept.ts). */
function printPreview(cli: Cli, job: string, p: JobPreview, rowsWanted: number): void {
  if (!p.result) {
    const emptied = p.range
      ? `the period ${describeRange(p.range.range)}`
      : p.mandant
        ? `mandant ${p.mandant.value}'s rows`
        : 'it';
    cli.out(
      `${job}: the report has no rows and no columns (rows=${p.reportRows}); a load would leave ${p.targetTable} as ` +
        `it is (replace empties ${emptied})`,
    );
    return;
  }
  const { columns, rows, misfits } = p.result;
  const shaped = columns.some((c) => c.source === 'fixed');
  const lines = !columns.some((c) => c.type === 'bytea') && columns.some((c) => c.name === 'line');
  const unit = !shaped ? '' : lines ? ' lines' : ' documents (one per page)';
  const count = p.reportRows.toLocaleString('en-US');
  const of =
    p.loadedDocuments !== undefined
      ? `of the ${p.loadedDocuments} the run loaded`
      : shaped
        ? `of a report with ${count} rows`
        : `of ${count} rows`;
  cli.out(`${job}: first ${rows.length}${unit} ${of}, into ${p.targetTable} — nothing was loaded`);
  cli.out('');
  const types = columns.map((c) => [c.name, c.type, c.source, c.reportName]);
  for (const l of textTable(['column', 'type', 'from', 'report column'], types)) cli.out(l);
  cli.out('');
  const names = columns.map((c) => c.name);
  for (const l of textTable(
    names,
    rows.map((r) => r.map(cell)),
  ))
    cli.out(l);
  if (!shaped && rows.length < rowsWanted && p.reportRows > rows.length)
    cli.out(`(the first page had ${rows.length} rows)`);
  if (columns.some((c) => c.source === 'inferred'))
    cli.out(
      '\ninferred types come from these rows only; a load infers them from every row (declare a type under ' +
        'target.columns to fix it)',
    );
  const holds = (deletes: number | undefined) =>
    deletes === undefined ? 'the table does not exist yet' : `it holds ${deletes.toLocaleString('en-US')}`;
  if (p.range) {
    const { range, deletes, mandant } = p.range;
    const of = mandant ? ` of mandant ${mandant.value} (${mandant.column} = ${mandant.value})` : '';
    cli.out(
      `\na load replaces the period ${range.column} in [${range.from}, ${range.to})${of} of ${p.targetTable} (` +
        `${holds(deletes)}) with the report's ${count} rows, in one transaction; rows outside the period` +
        `${mandant ? " and the other mandants' rows" : ''} stay`,
    );
  }
  if (p.mandant) {
    const { column, value, deletes } = p.mandant;
    cli.out(
      `\na load replaces the rows of mandant ${value} (${column} = ${value}) of ${p.targetTable} (${holds(deletes)}) ` +
        `with the report's ${count} rows, in one transaction; the other mandants' rows stay`,
    );
  }
  for (const m of p.result.outsideRange)
    cli.err(
      `warning: row ${m.row}, column ${m.column}: "${cell(m.value)}" lies outside the period: a load would fail ` +
        'with RANGE_VIOLATION',
    );
  for (const m of misfits) {
    const type = columns.find((c) => c.name === m.column)?.type;
    cli.err(
      `warning: row ${m.row}, column ${m.column}: "${cell(m.value)}" does not fit ${type}: a load of this row ` +
        'would fail',
    );
  }
}

/**
 * Where to fix what a failed preview names, so that the fix needs no other command: for a TARGET_INVALID naming
 * options of jobs.yaml (`details.unknown`, warehouse/target-names.ts) one line per name, `  fix jobs.yaml:17:54:
 * target.key: auftrag_nummer`; for a failure whose text (the server's, verbatim) names a report parameter the preview
 * sent, where it was set, `  parameter ROWS: given with -p ROWS=abc` or `  parameter FROM: jobs.yaml:12:40
 * (report.parameters.FROM)`. The service lists no report's parameters (docs/report-export-service.md), so their names
 * are the report's to know.
 */
async function whereToFix(
  err: EtlError,
  file: string,
  job: string,
  configured: Record<string, string> | undefined,
  given: Record<string, string>,
): Promise<string[]> {
  const { locateJobOption } = await import('../config/locate.ts');
  const lines: string[] = [];
  const unknown = (err.details as { unknown?: unknown } | undefined)?.unknown;
  for (const u of err.code === 'TARGET_INVALID' && Array.isArray(unknown) ? unknown : []) {
    const { option, name } = u as { option?: unknown; name?: unknown };
    if (typeof option === 'string')
      lines.push(`  fix ${(await locateJobOption(file, job, option)) ?? file}: ${option}: ${String(name)}`);
  }
  const text = `${err.serverMessage ?? ''}\n${err.message}`;
  const named = (name: string) => new RegExp(`(^|[^\\w])${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}([^\\w]|$)`);
  for (const name of new Set([...Object.keys(given), ...Object.keys(configured ?? {})])) {
    if (!named(name).test(text)) continue;
    if (Object.hasOwn(given, name)) lines.push(`  parameter ${name}: given with -p ${name}=${given[name]}`);
    else {
      const at = await locateJobOption(file, job, `report.parameters.${name}`);
      lines.push(`  parameter ${name}: ${at ?? file} (report.parameters.${name})`);
    }
  }
  return lines;
}

export const registerPreview: RegisterCommand = (program, cli) => {
  const cmd = program
    .command('preview')
    .description('show what a job would load (columns, types, first rows) without loading anything');
  manualRunOptions(cmd)
    .argument('<job>', 'job name in jobs.yaml (with --from-pages: a run key or attempt id)')
    .option('--rows <n>', 'rows to show (1-1000)', wholeNumber(1), 10)
    .option('--from-pages', 'preview the pages a run kept (target.archive), without asking the server')
    .option('--job <job>', 'with --from-pages: the job the run key is of, when run keys of several jobs match')
    .action(async (jobName: string, opts: ManualRunFlags & { rows: number; fromPages?: boolean; job?: string }) => {
      if (opts.job !== undefined && !opts.fromPages)
        return fail(cli, 'report-etl preview: --job goes with --from-pages; without it, the argument is the job');
      if (opts.fromPages) {
        const { previewKeptPagesCommand } = await import('./preview-kept.ts');
        await previewKeptPagesCommand(cli, jobName, opts, printPreview);
        return;
      }
      // Loaded here: `--help` and the other commands need none of it (start-up cost).
      const [{ resolveJob }, { previewJob }, { loadConfigForJob }] = await Promise.all([
        import('../config/load.ts'),
        import('../pipeline/preview.ts'),
        import('./job-config.ts'),
      ]);
      const loaded = await loadConfigForJob(cli, opts.config, jobName);
      const job = resolveJob(loaded.config, jobName, opts.config);
      // A job with many mandants: one preview per mandant (docs/loaded-tables.md "Many mandants").
      const subjects = chooseSubjects(jobName, job.job, opts.mandant);
      const chosen = opts.logicalTime ? parseZonedDate(opts.logicalTime, job.zone) : undefined;
      const interval = manualInterval(job, new Date(), chosen);
      const controller = new AbortController();
      const onSignal = () => controller.abort(new Error('interrupted'));
      process.once('SIGINT', onSignal);
      try {
        await withStores(
          async ({ pool, redis, logger }) => {
            for (const subject of subjects) {
              const name = subject.name;
              try {
                const preview = await previewJob({
                  job: resolveJob(loaded.config, name, opts.config),
                  parameters: opts.param,
                  rows: Math.min(opts.rows, 1000),
                  pool,
                  redis,
                  logger,
                  signal: controller.signal,
                  prefix: queuePrefixFromEnv(),
                  interval,
                });
                // A job without schedule stands for no interval: said only when --logical-time chose a time.
                if (job.job.schedule || chosen) {
                  const stands = describeInterval(job, interval, chosen !== undefined, (t) => formatTime(t, job.zone));
                  cli.out(`${name}: ${stands}`);
                }
                printPreview(cli, name, preview, opts.rows);
              } catch (err) {
                if (!(err instanceof EtlError) || err.code === 'CONFIG_INVALID') throw err;
                const server =
                  err.serverMessage && !err.message.includes(err.serverMessage) ? `\n${err.serverMessage}` : '';
                cli.err(`${name}: preview failed (${err.code}): ${err.message}${server}`);
                const fixes = await whereToFix(err, opts.config, jobName, job.job.report.parameters, opts.param);
                for (const line of fixes) cli.err(line);
                cli.exit(err.code === 'REPORT_NAME_INVALID' ? 2 : 1);
              }
            }
          },
          { logFormat: opts.logFormat },
        );
      } finally {
        process.off('SIGINT', onSignal);
      }
    });
};
