/**
 * The commands (README "Commands"), each in its own module, loaded only when registered: `report-etl run <job>`
 * loads `run.ts` alone (start-up cost); `--help` and anything that names no command load them all.
 */
import type { RegisterCommand } from './types.ts';

/** One command: its name, as its module registers it, and the import of that module. */
export interface CommandEntry {
  readonly name: string;
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
  { name: 'pages', load: async () => (await import('./pages.ts')).registerPages },
  { name: 'admin', load: async () => (await import('./admin.ts')).registerAdmin },
  { name: 'login', load: async () => (await import('./login.ts')).registerLogin },
];

/**
 * The registrations the arguments after the script need: the named command's, else every command's (`--help`,
 * `help <command>`, a misspelt command, for which commander suggests the closest name), in `--help` order.
 */
export async function commandsFor(args: readonly string[]): Promise<RegisterCommand[]> {
  const named = commands.find((c) => c.name === args[0]);
  return Promise.all((named ? [named] : commands).map((c) => c.load()));
}

/** Every command's registration, in `--help` order. */
export function allCommands(): Promise<RegisterCommand[]> {
  return commandsFor([]);
}
