/** `report-etl migrate`: applies migrations/ to DATABASE_URL. */
import { CONFIG_NOT_READ, configOption } from './options.ts';
import type { RegisterCommand } from './types.ts';

export const registerMigrate: RegisterCommand = (program, cli) => {
  configOption(
    program
      .command('migrate')
      .description('apply the run-history migrations (migrations/*.sql) to DATABASE_URL; safe to run concurrently'),
    CONFIG_NOT_READ,
  ).action(async () => {
    // Loaded here: `--help` and the other commands need none of it (start-up cost).
    const [{ checkPostgres, migrateExplained }, { makePool }, { makeLogger }] = await Promise.all([
      import('../app/bootstrap.ts'),
      import('../app/connections.ts'),
      import('../logger.ts'),
    ]);
    await checkPostgres();
    const logger = makeLogger();
    const pool = makePool(logger);
    try {
      const applied = await migrateExplained(pool, logger);
      cli.out(applied.length ? `applied migrations ${applied.join(', ')}` : 'database is up to date');
    } finally {
      await pool.end();
      logger.flush();
    }
  });
};
