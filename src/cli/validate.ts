/**
 * `report-etl validate [--config PATH] [--no-database]` (README "Commands"): checks jobs.yaml and the environment,
 * and target names against PostgreSQL's catalogue when it can be read. Prints `jobs.yaml: ok, N jobs (a, b) on M
 * connections` and warnings (`warning: …`), exit 0; or every problem as an error (`file:line:col: error: path: what is
 * wrong`, then `file: N errors`), exit 2. The settings of the environment report-etl reads besides the file
 * (`REPORT_ETL_TIME_ZONE`, `REPORT_ETL_TRACE_URL`) are checked too:
 * `error: environment: REPORT_ETL_TIME_ZONE=Mars/Base: unknown time zone (…)`, exit 2.
 */
import { cronTicks } from '../config/cron-ticks.ts';
import { formatTime, timeZoneSettingProblem } from '../time-text.ts';
import { traceUrlProblem } from '../trace-link.ts';
import { configOption } from './options.ts';
import { ConfigError } from '../errors.ts';
import type { TargetCatalogue } from '../config/target-checks.ts';
import type { Cli, RegisterCommand } from './types.ts';
import { scheduleZone } from '../config/job-zone.ts';

/** The existing targets of the jobs in `path`; undefined when none is named or PostgreSQL cannot be read (said). */
async function existingTargets(cli: Cli, path: string): Promise<TargetCatalogue | undefined> {
  const [{ configTargetTables }, { readTargetCatalogue }] = await Promise.all([
    import('../config/load.ts'),
    import('./target-catalogue.ts'),
  ]);
  const tables = await configTargetTables(path);
  if (tables.length === 0) return undefined;
  const read = await readTargetCatalogue(tables);
  if ('catalogue' in read) return read.catalogue;
  cli.err(
    `warning: targets were not checked against the database (${read.unavailable}); the file was checked alone; a ` +
      "run still checks its target names against the report's columns before it loads (--no-database skips this " +
      'check)',
  );
  return undefined;
}

/** `1 job`, `4 errors`. */
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

export const registerValidate: RegisterCommand = (program, cli) => {
  configOption(
    program
      .command('validate')
      .description(
        'check jobs.yaml and the environment it references, and its target names against existing tables ' +
          '(read-only), without contacting any report server',
      ),
    'jobs.yaml to check',
  )
    .option('--no-database', 'check the file alone, without reading existing targets from PostgreSQL (DATABASE_URL)')
    .action(async (opts: { config: string; database: boolean }) => {
      const { configWarnings, loadConfig } = await import('../config/load.ts');
      // The settings of the environment itself, checked whatever the file says.
      const envProblems = [timeZoneSettingProblem(), traceUrlProblem()].filter((p) => p !== undefined);
      const targets = opts.database ? await existingTargets(cli, opts.config) : undefined;
      try {
        const { config } = await loadConfig(opts.config, process.env, { targets });
        for (const warning of configWarnings(config, opts.config, targets)) cli.err(`warning: ${warning}`);
        const jobs = Object.keys(config.jobs);
        const named = jobs.length ? ` (${jobs.join(', ')})` : '';
        const connections = plural(Object.keys(config.connections).length, 'connection');
        cli.out(`${opts.config}: ok, ${plural(jobs.length, 'job')}${named} on ${connections}`);
        // Each job's next tick, so that a schedule that reads otherwise than meant shows at once.
        const now = new Date();
        for (const [name, job] of Object.entries(config.jobs)) {
          const zone = scheduleZone(config, job);
          const next = job.schedule ? cronTicks(job.schedule, zone).next(now) : undefined;
          const when = !job.schedule
            ? 'no schedule (runs by hand or enqueue only)'
            : `"${job.schedule}" in ${zone}, next tick ${next ? formatTime(next, zone) : 'none within a year'}`;
          // A job with many mandants runs once per mandant (docs/loaded-tables.md "Many mandants").
          const list = Array.isArray(job.report.mandant) ? job.report.mandant : undefined;
          const runs = list ? `; ${plural(list.length, 'mandant')}: ${list.join(', ')}` : '';
          cli.out(`  ${name}: ${when}${runs}`);
        }
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        // Errors here, whatever `run` of another job calls them (it skips the job with a warning and carries on).
        for (const problem of err.problems) cli.err(errorLine(problem));
        cli.err(`${opts.config}: ${plural(err.problems.length, 'error')}`);
        cli.exit(2);
      }
      if (envProblems.length === 0) return;
      for (const problem of envProblems) cli.err(`error: environment: ${problem}`);
      cli.err(`environment: ${plural(envProblems.length, 'error')}`);
      cli.exit(2);
    });
};

/**
 * A problem as validate prints it: `file:line:col: error: what` when it has a place (the compilers' form, which
 * terminals and editors link), else `error: what` (README "Commands").
 */
function errorLine(problem: string): string {
  const placed = /^([^\s:]+:\d+:\d+): (.*)$/s.exec(problem);
  return placed ? `${placed[1]}: error: ${placed[2]}` : `error: ${problem}`;
}
