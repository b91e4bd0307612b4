import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        // Unit files touch only their own temp directories, loopback sockets and private journals: they run
        // side by side, and all of them finish before the first host-measuring file starts.
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], maxWorkers: 3, sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        // Integration and e2e tests start real processes, namespaces and cgroups and measure the host
        // (free disk, process count, timing): one file at a time keeps those measurements honest.
        test: {
          name: 'host',
          include: ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'],
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
