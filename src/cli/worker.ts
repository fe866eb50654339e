/** `report-etl worker [--concurrency N] [--grace S]`: runs queued runs (queue/worker.ts). */
import { serviceCommand } from './service-command.ts';

export const registerWorker = serviceCommand('worker', 'run queued runs; scale out by starting more', { worker: true });
