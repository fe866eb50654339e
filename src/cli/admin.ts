/** `report-etl admin`: the admin HTTP server alone (bull-board, run history with replay, /healthz, /readyz, /metrics). */
import type { RegisterCommand } from './types.ts';
import { runService, serviceOptions, type ServiceCommandOptions } from './service-command.ts';

export const registerAdmin: RegisterCommand = (program, cli) => {
  serviceOptions(
    program
      .command('admin')
      .description('the admin HTTP server alone: bull-board, run history, replay, health and metrics'),
    { admin: true },
  ).action(async (opts: ServiceCommandOptions) => runService(cli, opts, { admin: true }));
};
