/** `report-etl migrate`: applies migrations/ to DATABASE_URL. */
import { checkPostgres } from '../app/bootstrap.ts';
import { makePool } from '../app/connections.ts';
import { migrate } from '../history/migrate.ts';
import { makeLogger } from '../logger.ts';
import type { RegisterCommand } from './types.ts';

export const registerMigrate: RegisterCommand = (program, cli) => {
  program
    .command('migrate')
    .description('apply the run-history migrations (migrations/*.sql) to DATABASE_URL; safe to run concurrently')
    .action(async () => {
      await checkPostgres();
      const logger = makeLogger();
      const pool = makePool(logger);
      try {
        const applied = await migrate(pool, logger);
        cli.out(applied.length ? `applied migrations ${applied.join(', ')}` : 'database is up to date');
      } finally {
        await pool.end();
        logger.flush();
      }
    });
};
