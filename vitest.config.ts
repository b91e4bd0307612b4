import { defineConfig } from 'vitest/config';

/**
 * Files that must have the machine to themselves: they kill runs on purpose and then look for what those runs
 * left (another run's start would sweep it first), snapshot the whole host (free disk, temp names any run
 * makes), or load the CPU on purpose; and the presets, whose expectations were measured with the machine to
 * themselves (beside another whole-suite file, third-party tools' slow starts turned held probes inconclusive).
 */
const ALONE = [
  'test/integration/presets-clis.test.ts',
  'test/integration/presets-containers.test.ts',
  'test/integration/process-backend.test.ts',
  'test/integration/chaos.test.ts',
  'test/e2e/crash-recovery.test.ts',
  'test/e2e/signal-teardown.test.ts',
  'test/e2e/rpc-adapter.test.ts',
  'test/e2e/load-stability.test.ts',
  'test/integration/docker-new-probes.test.ts',
  'test/integration/host-sampler.test.ts',
];
const HOST = ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        // Unit files touch only their own temp directories, loopback sockets and private journals: they run
        // side by side, and all of them finish before the first host file starts.
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], maxWorkers: 3, sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        // Integration and e2e files start real processes, namespaces, daemons and cgroups, each named and checked
        // by its own run id: two at a time (most of their time is spent waiting on boxes, clocks and daemons).
        test: { name: 'host', include: HOST, exclude: ALONE, maxWorkers: 2, sequence: { groupOrder: 1 } },
      },
      {
        extends: true,
        test: { name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 2 } },
      },
    ],
  },
});
