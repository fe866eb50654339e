/** `report-etl admin`: the admin HTTP server alone. */
import { serviceCommand } from './service-command.ts';

export const registerAdmin = serviceCommand(
  'admin',
  'the admin HTTP server alone: bull-board, run history, replay, health and metrics',
  { admin: true },
);
