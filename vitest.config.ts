import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration and e2e tests start real processes, namespaces and cgroups and measure the host
    // (free disk, process count, timing): one file at a time keeps those measurements honest.
    fileParallelism: false,
  },
});
