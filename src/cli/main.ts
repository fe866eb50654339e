/**
 * Command-line entry (README "Commands"). Exit codes: 0 ok, 1 run failed, 2 usage or config error, or PostgreSQL /
 * Redis not usable or lost mid-command (one line saying which, where and what to do).
 */
import { terminalSafe } from '../terminal-text.ts';
import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import { StoreUnavailableError } from '../app/store-unavailable.ts';
import { coerceError, ConfigError, isConnectionLoss } from '../errors.ts';
import { listenFailureText } from '../listen-error.ts';
import { commandsFor } from './commands.ts';
import type { Cli } from './types.ts';

/** The package version, from package.json. */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** Runs the command line `argv` ([node, script, ...args]); returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  let exitCode = 0;
  const cli: Cli = {
    // Lines can carry the server's words: a terminal gets them without control characters.
    out: (line) => process.stdout.write(`${terminalSafe(line)}\n`),
    err: (line) => process.stderr.write(`${terminalSafe(line)}\n`),
    exit: (code) => {
      exitCode = code;
    },
  };
  const program = new Command('report-etl')
    .description('Scheduled report-to-warehouse ETL: ERP Report Export Service -> PostgreSQL')
    .version(packageVersion(), '-V, --version')
    .showHelpAfterError()
    .exitOverride();
  for (const register of await commandsFor(argv.slice(2))) register(program, cli);
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with exit code 0; usage errors with 1, which we report as 2.
      return err.exitCode === 0 ? 0 : 2;
    }
    if (err instanceof ConfigError) {
      cli.err(`report-etl: config error: ${err.message}`);
      return 2;
    }
    // PostgreSQL or Redis down or refusing us: one line, not a stack trace.
    if (err instanceof StoreUnavailableError) {
      cli.err(`report-etl: ${err.message}`);
      return 2;
    }
    // The admin server or the simulator could not listen (a port in use, say): one line naming where and what to do.
    const listen = listenFailureText(err, listenHow(argv[2]));
    if (listen !== undefined) {
      cli.err(`report-etl: ${listen}`);
      return 2;
    }
    // A connection lost while the command ran (PostgreSQL restarted, its session ended): the same.
    if (isConnectionLoss(err)) {
      cli.err(
        `report-etl: the connection to PostgreSQL or Redis was lost: ${coerceError(err).message}; run the command ` +
          'again once they answer',
      );
      return 2;
    }
    throw err;
  }
  return exitCode;
}

/** Where a command that listens takes its port and host: `admin` and `start` also from the environment. */
function listenHow(command: string | undefined): { port: string; host: string } {
  const admin = command === 'admin' || command === 'start';
  return { port: admin ? '--port N, or ADMIN_PORT' : '--port N', host: admin ? '--host H, or ADMIN_HOST' : '--host H' };
}
