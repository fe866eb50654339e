import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration tests share one Postgres and one Redis; each file uses its own schema and key prefix.
    fileParallelism: true,
    maxWorkers: 2,
  },
});
