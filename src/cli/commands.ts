/**
 * The commands of the CLI, each in its own module that adds it to the program (README "Commands"). A
 * command's module is loaded only when it is registered: `report-etl run <job>` loads `run.ts` alone, not the 15
 * others with their imports (start-up cost); `--help` and anything that names no command load them all.
 */
import type { RegisterCommand } from './types.ts';

/** One command: its name on the command line, and the import of the module that registers it. */
export interface CommandEntry {
  /** The first word after `report-etl`, as the module registers it (test/cli-commands.test.ts checks that they agree). */
  readonly name: string;
  /** Imports the command's module; resolves to its {@link RegisterCommand}. */
  readonly load: () => Promise<RegisterCommand>;
}

/** Every command, in the order `--help` lists them. */
export const commands: readonly CommandEntry[] = [
  { name: 'run', load: async () => (await import('./run.ts')).registerRun },
  { name: 'preview', load: async () => (await import('./preview.ts')).registerPreview },
  { name: 'validate', load: async () => (await import('./validate.ts')).registerValidate },
  { name: 'migrate', load: async () => (await import('./migrate.ts')).registerMigrate },
  { name: 'simulate', load: async () => (await import('./simulate.ts')).registerSimulate },
  { name: 'scheduler', load: async () => (await import('./scheduler.ts')).registerScheduler },
  { name: 'worker', load: async () => (await import('./worker.ts')).registerWorker },
  { name: 'start', load: async () => (await import('./start.ts')).registerStart },
  { name: 'enqueue', load: async () => (await import('./enqueue.ts')).registerEnqueue },
  { name: 'runs', load: async () => (await import('./runs.ts')).registerRuns },
  { name: 'replay', load: async () => (await import('./replay.ts')).registerReplay },
  { name: 'revert', load: async () => (await import('./revert.ts')).registerRevert },
  { name: 'backfill', load: async () => (await import('./backfill.ts')).registerBackfill },
  { name: 'documents', load: async () => (await import('./documents.ts')).registerDocuments },
  { name: 'admin', load: async () => (await import('./admin.ts')).registerAdmin },
  { name: 'login', load: async () => (await import('./login.ts')).registerLogin },
];

/**
 * The registrations the command line `args` needs: only the named command's when the first argument names one,
 * else every command (`--help`, `help <command>`, `--version`, a misspelt command, for which commander suggests
 * the closest name among all of them).
 * @param args the arguments after the script, e.g. `['run', 'orders', '--param', 'X=1']`
 * @returns the registrations, in `--help` order
 */
export async function commandsFor(args: readonly string[]): Promise<RegisterCommand[]> {
  const named = commands.find((c) => c.name === args[0]);
  return Promise.all((named ? [named] : commands).map((c) => c.load()));
}

/** Every command's registration, in `--help` order (tests, and the checks of the Dockerfile and README). */
export function allCommands(): Promise<RegisterCommand[]> {
  return commandsFor([]);
}
