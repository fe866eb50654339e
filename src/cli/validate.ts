/**
 * `report-etl validate [--config PATH] [--no-database]`: checks jobs.yaml and the environment without contacting a
 * Report Export Service (README "Commands"). It reads PostgreSQL's catalogue (read-only) to check the target names of
 * existing targets; when PostgreSQL cannot be read it says so and checks the file alone. Exit 0 with a one-line
 * summary, or exit 2 with every problem listed.
 */
import { configOption } from './options.ts';
import { ConfigError } from '../errors.ts';
import type { TargetCatalogue } from '../config/target-checks.ts';
import type { Cli, RegisterCommand } from './types.ts';

/**
 * The existing targets of the jobs in `path`, read from PostgreSQL; undefined (after a warning on stderr) when it
 * cannot be read, or when no job names a valid target table.
 */
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
    `warning: targets were not checked against the database (${read.unavailable}); the file was checked alone; a run still checks its target names against the report's columns before it loads (--no-database skips this check)`,
  );
  return undefined;
}

/**
 * Registers `validate`. Prints `jobs.yaml: ok, N jobs (a, b) on M connections` to stdout (warnings, e.g. a
 * localhost redirectUri or jobs sharing a target, to stderr) and exits 0, or prints each problem
 * (`file:line:col: path: what is wrong`) and a count to stderr and exits 2. A PostgreSQL that cannot be read is a
 * warning: the exit code follows the file's own problems.
 */
export const registerValidate: RegisterCommand = (program, cli) => {
  configOption(
    program
      .command('validate')
      .description(
        'check jobs.yaml and the environment it references, and its target names against existing tables (read-only), without contacting any report server',
      ),
    'jobs.yaml to check',
  )
    .option('--no-database', 'check the file alone, without reading existing targets from PostgreSQL (DATABASE_URL)')
    .action(async (opts: { config: string; database: boolean }) => {
      const { configWarnings, loadConfig } = await import('../config/load.ts');
      const targets = opts.database ? await existingTargets(cli, opts.config) : undefined;
      try {
        const { config } = await loadConfig(opts.config, process.env, { targets });
        for (const warning of configWarnings(config, opts.config, targets)) cli.err(`warning: ${warning}`);
        const jobs = Object.keys(config.jobs);
        const connections = Object.keys(config.connections).length;
        const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
        cli.out(
          `${opts.config}: ok, ${plural(jobs.length, 'job')}${jobs.length ? ` (${jobs.join(', ')})` : ''} on ${plural(connections, 'connection')}`,
        );
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        for (const problem of err.problems) cli.err(problem);
        cli.err(`${opts.config}: ${err.problems.length} problem${err.problems.length === 1 ? '' : 's'}`);
        cli.exit(2);
      }
    });
};
