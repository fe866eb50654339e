/** The list of commands the CLI registers; each module adds one command to the program. */
import type { RegisterCommand } from './types.ts';
import { registerMigrate } from './migrate.ts';
import { registerRun } from './run.ts';
import { registerSimulate } from './simulate.ts';
import { registerValidate } from './validate.ts';
import { registerScheduler } from './scheduler.ts';
import { registerWorker } from './worker.ts';
import { registerStart } from './start.ts';
import { registerEnqueue } from './enqueue.ts';
import { registerRuns } from './runs.ts';
import { registerReplay } from './replay.ts';
import { registerBackfill } from './backfill.ts';
import { registerAdmin } from './admin.ts';
import { registerLogin } from './login.ts';
import { registerPreview } from './preview.ts';
import { registerDocuments } from './documents.ts';

/** Every command, in the order `--help` lists them. */
export const commands: RegisterCommand[] = [registerRun, registerPreview, registerValidate, registerMigrate, registerSimulate,
  registerScheduler, registerWorker, registerStart, registerEnqueue, registerRuns, registerReplay, registerBackfill, registerDocuments, registerAdmin, registerLogin];
