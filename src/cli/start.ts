/** `report-etl start`: scheduler, worker and admin server in one process, for small installations. */
import { serviceCommand } from './service-command.ts';

export const registerStart = serviceCommand('start', 'scheduler + worker + admin server in one process', {
  scheduler: true,
  worker: true,
  admin: true,
});
