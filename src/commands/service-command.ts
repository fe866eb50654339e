/**
 * Shared by the long-running commands `scheduler`, `worker` and `start`: starts the service, then waits for
 * SIGTERM/SIGINT. The first signal drains gracefully (scheduler stops, the worker takes no new runs and lets
 * running ones finish up to --grace seconds, then aborts them); a second signal aborts running runs at once
 * (rolled back, report job deleted, recorded interrupted) and exits within 10 s whatever happens.
 */
import { Option, type Command } from 'commander';
import type { Cli } from '../cli.ts';
import { defaultConfigPath } from '../cli.ts';
import { makeLogger } from '../logger.ts';
import { queuePrefixFromEnv } from '../queue/names.ts';
import { startService, type ServiceOptions } from '../queue/service.ts';

/** How long a second signal waits for the aborted runs before the process exits, in ms. */
const FORCE_EXIT_MS = 10_000;

/** Options every long-running command takes. */
export interface ServiceCommandOptions {
  config: string;
  queuePrefix: string;
  concurrency?: string;
  grace?: string;
  port?: string;
  host?: string;
}

/** Adds the options shared by the long-running commands. */
export function serviceOptions(cmd: Command, withWorker: boolean): Command {
  cmd.option('-c, --config <path>', 'jobs.yaml to read (watched for changes)', defaultConfigPath());
  cmd.addOption(new Option('--queue-prefix <prefix>', 'BullMQ key prefix').default(queuePrefixFromEnv()));
  if (withWorker) {
    cmd.option('--concurrency <n>', 'runs at the same time in this process', '1');
    cmd.option('--grace <seconds>', 'on SIGTERM/SIGINT, how long running runs may finish before they are aborted', '60');
  }
  return cmd;
}

/** Parses a positive integer option. @throws Error naming the option */
export function positiveInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} wants a whole number >= 0, got "${value}"`);
  return n;
}

/** Runs the service until a signal stops it. Resolves when everything is closed. */
export async function runService(cli: Cli, opts: ServiceCommandOptions, parts: Pick<ServiceOptions, 'scheduler' | 'worker' | 'admin'>): Promise<void> {
  const logger = makeLogger();
  const concurrency = positiveInt('--concurrency', opts.concurrency, 1);
  const graceMs = positiveInt('--grace', opts.grace, 60) * 1000;
  const service = await startService({
    configPath: opts.config,
    logger,
    prefix: opts.queuePrefix,
    graceMs,
    workerOptions: { concurrency: Math.max(1, concurrency) },
    ...parts,
    ...(opts.port !== undefined ? { adminPort: positiveInt('--port', opts.port, 3000) } : {}),
    ...(opts.host !== undefined ? { adminHost: opts.host } : {}),
  });
  const what = Object.entries(parts).filter(([, on]) => on).map(([k]) => k).join(' + ');
  cli.out(`report-etl ${what} running (queue prefix ${opts.queuePrefix}${service.adminUrl ? `, admin ${service.adminUrl}` : ''}); SIGTERM/SIGINT to stop`);
  await new Promise<void>((resolve) => {
    let signals = 0;
    const onSignal = (sig: NodeJS.Signals) => {
      signals += 1;
      if (signals === 1) {
        logger.warn({ signal: sig, graceMs }, 'stopping: no new runs; running runs may finish (signal again to abort them)');
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
