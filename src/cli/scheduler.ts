/** `report-etl scheduler`: queues one run per tick of every scheduled job (see src/queue/scheduler.ts). */
import type { RegisterCommand } from './types.ts';
import { runService, serviceOptions, type ServiceCommandOptions } from './service-command.ts';

export const registerScheduler: RegisterCommand = (program, cli) => {
  serviceOptions(
    program
      .command('scheduler')
      .description('queue scheduled runs (exactly one per tick, however many schedulers run)'),
    {},
  ).action(async (opts: ServiceCommandOptions) => runService(cli, opts, { scheduler: true }));
};
