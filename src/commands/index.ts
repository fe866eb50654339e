/** The list of commands the CLI registers; each module adds one command to the program. */
import type { Command } from 'commander';
import type { Cli } from '../cli.ts';
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

/** Adds one command to `program`. */
export type RegisterCommand = (program: Command, cli: Cli) => void;

export const commands: RegisterCommand[] = [registerRun, registerValidate, registerMigrate, registerSimulate,
  registerScheduler, registerWorker, registerStart, registerEnqueue, registerRuns, registerReplay, registerBackfill, registerAdmin];
