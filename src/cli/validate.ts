/**
 * `report-etl validate [--config PATH]`: checks jobs.yaml and the environment without touching a server
 * (README "Commands"). Exit 0 with a one-line summary, or exit 2 with every problem listed.
 */
import { configOption } from './options.ts';
import { ConfigError } from '../errors.ts';
import type { RegisterCommand } from './types.ts';

/**
 * Registers `validate`. Prints `jobs.yaml: ok, N jobs (a, b) on M connections` to stdout (warnings, e.g. a
 * localhost redirectUri, to stderr) and exits 0, or
 * prints each problem (`file:line:col: path: what is wrong`) and a count to stderr and exits 2.
 */
export const registerValidate: RegisterCommand = (program, cli) => {
  configOption(program.command('validate').description('check jobs.yaml and the environment it references, without contacting any server'), 'jobs.yaml to check')
    .action(async (opts: { config: string }) => {
      const { configWarnings, loadConfig } = await import('../config/load.ts');
      try {
        const { config } = await loadConfig(opts.config);
        for (const warning of configWarnings(config, opts.config)) cli.err(`warning: ${warning}`);
        const jobs = Object.keys(config.jobs);
        const connections = Object.keys(config.connections).length;
        const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
        cli.out(`${opts.config}: ok, ${plural(jobs.length, 'job')}${jobs.length ? ` (${jobs.join(', ')})` : ''} on ${plural(connections, 'connection')}`);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        for (const problem of err.problems) cli.err(problem);
        cli.err(`${opts.config}: ${err.problems.length} problem${err.problems.length === 1 ? '' : 's'}`);
        cli.exit(2);
      }
    });
};
