/** `report-etl start`: scheduler, worker and admin server in one process, for small installations. */
import type { RegisterCommand } from './index.ts';
import { runService, serviceOptions, type ServiceCommandOptions } from './service-command.ts';

export const registerStart: RegisterCommand = (program, cli) => {
  serviceOptions(program.command('start').description('scheduler + worker + admin server in one process'), true)
    .option('--port <port>', 'admin server port ($ADMIN_PORT)', process.env.ADMIN_PORT ?? '3000')
    .option('--host <host>', 'admin server interface ($ADMIN_HOST)', process.env.ADMIN_HOST ?? '127.0.0.1')
    .action(async (opts: ServiceCommandOptions) => runService(cli, opts, { scheduler: true, worker: true, admin: true }));
};
