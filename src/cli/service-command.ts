/**
 * Shared by the long-running commands `scheduler`, `worker` and `start`: starts the service, then waits for
 * SIGTERM/SIGINT. The first signal drains gracefully (scheduler stops, the worker takes no new runs and lets
 * running ones finish up to --grace seconds, then aborts them); a second signal aborts running runs at once
 * (rolled back, report job deleted, recorded interrupted) and exits within 10 s whatever happens.
 */
import { Option, type Command } from 'commander';
import type { ServiceOptions } from '../app/service.ts';
import { configOption, logFormatOption, queuePrefixOption, wholeNumber, type LogFormatFlag } from './options.ts';
import type { Cli } from './types.ts';

/** How long a second signal waits for the aborted runs before the process exits, in ms. */
const FORCE_EXIT_MS = 10_000;

/** Options every long-running command takes, as commander parsed them. */
export interface ServiceCommandOptions extends LogFormatFlag {
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

/** Adds the options of the long-running commands: always config and queue prefix, then the worker's and the admin server's. */
export function serviceOptions(cmd: Command, parts: { worker?: boolean; admin?: boolean }): Command {
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

/** Runs the service until a signal stops it. Resolves when everything is closed. */
export async function runService(
  cli: Cli,
  opts: ServiceCommandOptions,
  parts: Pick<ServiceOptions, 'scheduler' | 'worker' | 'admin'>,
): Promise<void> {
  // Loaded here, not at the top: `--help` and the short commands need none of the service (start-up cost).
  const [{ startService }, { makeLogger }] = await Promise.all([import('../app/service.ts'), import('../logger.ts')]);
  const logger = makeLogger({}, opts.logFormat);
  const graceMs = (opts.grace ?? 60) * 1000;
  let adminPort: number | undefined;
  if (opts.port !== undefined) {
    adminPort = Number(opts.port);
    if (!Number.isInteger(adminPort) || adminPort < 1) {
      cli.err(`report-etl: ADMIN_PORT is "${String(opts.port)}": write a port number, or pass --port`);
      cli.exit(2);
      return;
    }
  }
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
  const what = Object.entries(parts)
    .filter(([, on]) => on)
    .map(([k]) => k)
    .join(' + ');
  cli.out(
    `report-etl ${what} running (queue prefix ${opts.queuePrefix}${service.adminUrl ? `, admin ${service.adminUrl}` : ''}); SIGTERM/SIGINT to stop`,
  );
  await new Promise<void>((resolve) => {
    let signals = 0;
    const onSignal = (sig: NodeJS.Signals) => {
      signals += 1;
      if (signals === 1) {
        logger.warn(
          { signal: sig, graceMs },
          'stopping: no new runs; running runs may finish (signal again to abort them)',
        );
        service.stop().then(
          () => resolve(),
          (err: unknown) => {
            logger.error({ err: String(err) }, 'errors while stopping');
            resolve();
          },
        );
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
