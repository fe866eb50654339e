/** `report-etl migrate`: applies migrations/ to DATABASE_URL. */
import { CONFIG_NOT_READ, configOption } from './options.ts';
import { withPool } from './stores.ts';
import type { RegisterCommand } from './types.ts';

export const registerMigrate: RegisterCommand = (program, cli) => {
  configOption(
    program
      .command('migrate')
      .description('apply the run-history migrations (migrations/*.sql) to DATABASE_URL; safe to run concurrently'),
    CONFIG_NOT_READ,
  ).action(async () => {
    // Loaded here: `--help` and the other commands need none of it (start-up cost).
    const { migrateExplained } = await import('../app/bootstrap.ts');
    const applied = await withPool((pool, logger) => migrateExplained(pool, logger));
    cli.out(applied.length ? `applied migrations ${applied.join(', ')}` : 'database is up to date');
  });
};
