/** The list of commands the CLI registers; each module adds one command to the program. */
import type { Command } from 'commander';
import type { Cli } from '../cli.ts';

/** Adds one command to `program`. */
export type RegisterCommand = (program: Command, cli: Cli) => void;

export const commands: RegisterCommand[] = [];
