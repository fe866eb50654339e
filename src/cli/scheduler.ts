/** `report-etl scheduler`: queues one run per tick of every scheduled job (queue/scheduler.ts). */
import { serviceCommand } from './service-command.ts';

export const registerScheduler = serviceCommand(
  'scheduler',
  'queue scheduled runs (exactly one per tick, however many schedulers run)',
  { scheduler: true },
);
