import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // PostgreSQL and Redis at DATABASE_URL / REDIS_URL, or started ones where none answers (embedded PostgreSQL,
    // redis-server, a redis:7 container); sets both variables for the workers.
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration tests share one Postgres and one Redis; each file uses its own schema and key prefix.
    fileParallelism: true,
    maxWorkers: 2,
  },
});
