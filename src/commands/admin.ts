/** `report-etl admin`: the admin HTTP server alone (bull-board, run history with replay, /healthz, /readyz, /metrics). */
import type { RegisterCommand } from './index.ts';
import { runService, serviceOptions, type ServiceCommandOptions } from './service-command.ts';

export const registerAdmin: RegisterCommand = (program, cli) => {
  serviceOptions(program.command('admin').description('the admin HTTP server alone: bull-board, run history, replay, health and metrics'), false)
    .option('--port <port>', 'admin server port ($ADMIN_PORT)', process.env.ADMIN_PORT ?? '3000')
    .option('--host <host>', 'admin server interface ($ADMIN_HOST)', process.env.ADMIN_HOST ?? '127.0.0.1')
    .action(async (opts: ServiceCommandOptions) => runService(cli, opts, { admin: true }));
};
