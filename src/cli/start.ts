/** `report-etl start`: scheduler, worker and admin server in one process, for small installations. */
import type { RegisterCommand } from './types.ts';
import { runService, serviceOptions, type ServiceCommandOptions } from './service-command.ts';

export const registerStart: RegisterCommand = (program, cli) => {
  serviceOptions(program.command('start').description('scheduler + worker + admin server in one process'), {
    worker: true,
    admin: true,
  }).action(async (opts: ServiceCommandOptions) =>
    runService(cli, opts, { scheduler: true, worker: true, admin: true }),
  );
};
