/** `report-etl worker [--concurrency N] [--grace S]`: takes queued runs and runs them (see src/queue/worker.ts). */
import type { RegisterCommand } from './types.ts';
import { runService, serviceOptions, type ServiceCommandOptions } from './service-command.ts';

export const registerWorker: RegisterCommand = (program, cli) => {
  serviceOptions(program.command('worker').description('run queued runs; scale out by starting more'), {
    worker: true,
  }).action(async (opts: ServiceCommandOptions) => runService(cli, opts, { worker: true }));
};
