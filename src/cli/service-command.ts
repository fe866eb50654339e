/**
 * The long-running commands `scheduler`, `worker`, `start` and `admin`: start the service, then wait for
 * SIGTERM/SIGINT. The first signal drains (running runs may finish for --grace seconds); a second aborts running
 * runs at once and exits within {@link FORCE_EXIT_MS} whatever happens.
 */
import { Option, type Command } from 'commander';
import type { ServiceOptions } from '../app/service.ts';
import { configOption, logFormatOption, queuePrefixOption, wholeNumber, type LogFormatFlag } from './options.ts';
import { fail, type Cli, type RegisterCommand } from './types.ts';

/** The parts of the service a command runs, each named only to be run. */
type ServiceParts = Pick<ServiceOptions, 'scheduler' | 'worker' | 'admin'>;

/** How long a second signal waits for the aborted runs before the process exits, in ms. */
const FORCE_EXIT_MS = 10_000;

/** Options of the long-running commands, as commander parsed them. */
interface ServiceCommandOptions extends LogFormatFlag {
  config: string;
  queuePrefix: string;
  /** Runs at the same time (worker). */
  concurrency?: number;
  /** Seconds running runs may finish after the first signal (worker). */
  grace?: number;
  /** Admin server port: a flag (parsed) or `$ADMIN_PORT` (text). */
  port?: number | string;
  host?: string;
  /** Seconds between janitor sweeps. */
  janitorInterval?: number;
}

/** A long-running command running `parts` of the service. */
export function serviceCommand(name: string, description: string, parts: ServiceParts): RegisterCommand {
  return (program, cli) =>
    serviceOptions(program.command(name).description(description), parts).action((opts: ServiceCommandOptions) =>
      runService(cli, opts, parts),
    );
}

/** Adds the options of a long-running command: config and queue prefix, then the worker's and the admin's. */
function serviceOptions(cmd: Command, parts: ServiceParts): Command {
  configOption(cmd, 'jobs.yaml to read (watched for changes)');
  queuePrefixOption(cmd);
  logFormatOption(cmd);
  cmd.option(
    '--janitor-interval <seconds>',
    'seconds between janitor sweeps (orphaned attempts, stale alerts, history retention)',
    wholeNumber(1),
    30,
  );
  if (parts.worker) {
    cmd.option('--concurrency <n>', 'runs at the same time in this process', wholeNumber(1), 1);
    cmd.option(
      '--grace <seconds>',
      'on SIGTERM/SIGINT, how long running runs may finish before they are aborted',
      wholeNumber(0),
      60,
    );
  }
  if (parts.admin) {
    cmd.addOption(
      new Option('--port <port>', 'admin server port ($ADMIN_PORT)')
        .argParser(wholeNumber(1))
        .default(process.env.ADMIN_PORT ?? '3000'),
    );
    cmd.option('--host <host>', 'admin server interface ($ADMIN_HOST)', process.env.ADMIN_HOST ?? '127.0.0.1');
  }
  return cmd;
}

/** Runs the service until a signal stops it; resolves when everything is closed. */
async function runService(cli: Cli, opts: ServiceCommandOptions, parts: ServiceParts): Promise<void> {
  // Loaded here: `--help` and the short commands need none of the service (start-up cost).
  const [{ startService }, { makeLogger }] = await Promise.all([import('../app/service.ts'), import('../logger.ts')]);
  const logger = makeLogger({}, opts.logFormat);
  const graceMs = (opts.grace ?? 60) * 1000;
  const adminPort = opts.port === undefined ? undefined : Number(opts.port);
  if (adminPort !== undefined && !(Number.isInteger(adminPort) && adminPort >= 1))
    return fail(cli, `report-etl: ADMIN_PORT is "${String(opts.port)}": write a port number, or pass --port`);
  const service = await startService({
    configPath: opts.config,
    logger,
    prefix: opts.queuePrefix,
    graceMs,
    janitorIntervalMs: (opts.janitorInterval ?? 30) * 1000,
    workerOptions: { concurrency: opts.concurrency ?? 1 },
    ...parts,
    ...(adminPort !== undefined ? { adminPort } : {}),
    ...(opts.host !== undefined ? { adminHost: opts.host } : {}),
  });
  const what = Object.keys(parts).join(' + ');
  const admin = service.adminUrl ? `, admin ${service.adminUrl}` : '';
  cli.out(`report-etl ${what} running (queue prefix ${opts.queuePrefix}${admin}); SIGTERM/SIGINT to stop`);
  await new Promise<void>((resolve) => {
    let signals = 0;
    const onSignal = (sig: NodeJS.Signals) => {
      signals += 1;
      if (signals === 1) {
        logger.warn(
          { signal: sig, graceMs },
          'stopping: no new runs; running runs may finish (signal again to abort them)',
        );
        service
          .stop()
          .catch((err: unknown) => logger.error({ err: String(err) }, 'errors while stopping'))
          .finally(resolve);
      } else {
        logger.warn({ signal: sig }, 'second signal: aborting running runs now');
        service.abortRuns();
        setTimeout(() => {
          logger.flush();
          process.exit(130);
        }, FORCE_EXIT_MS).unref();
      }
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
  cli.out('report-etl stopped');
  logger.flush();
}
