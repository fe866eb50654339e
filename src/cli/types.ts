/** What every command module gets; its own module so that commands and main do not import each other. */
import type { Command } from 'commander';

/** Where a command writes, and how it sets the process's exit code. */
export interface Cli {
  /** A line to stdout. */
  out(line: string): void;
  /** A line to stderr. */
  err(line: string): void;
  /** Sets the exit code main() returns. */
  exit(code: number): void;
}

/** Adds one command to `program`. */
export type RegisterCommand = (program: Command, cli: Cli) => void;

/** Prints `line` on stderr and sets exit code `code` (default 2, usage): a command's refusal, before it returns. */
export function fail(cli: Cli, line: string, code = 2): void {
  cli.err(line);
  cli.exit(code);
}
