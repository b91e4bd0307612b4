import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration tests start real processes and namespaces; keep them from starving each other on 2 cores.
    maxWorkers: 2,
    fileParallelism: true,
  },
});
