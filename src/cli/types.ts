/** What every command module gets (README "Commands"); its own module so that commands and main do not import each other. */
import type { Command } from 'commander';

/** Where a command writes, and how it sets the process's exit code. */
export interface Cli {
  /** Writes a line of command output to stdout. */
  out(line: string): void;
  /** Writes a line of human-facing error output to stderr. */
  err(line: string): void;
  /** Sets the exit code main() returns (0 ok, 1 run failed, 2 usage or config error). */
  exit(code: number): void;
}

/** Adds one command to `program`. */
export type RegisterCommand = (program: Command, cli: Cli) => void;
