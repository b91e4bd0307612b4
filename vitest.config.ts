import { defineConfig } from 'vitest/config';
import { LongestFirst } from './test/helpers/longest-first.js';

/**
 * Files that must have the machine to themselves: they kill runs on purpose and then look for what those runs
 * left in the shared journal directory (another run's start would sweep it first), snapshot the whole host (free
 * disk, temp names any run makes), or load the CPU on purpose; and the presets, whose expectations were measured
 * with the machine to themselves (side by side, the two preset files passed one run in three here: once survive-teardown
 * ran into its 5 s wall, before its payload waited for the daemon's exec instead of a heartbeat file; once a task
 * program under codex sandbox exited 1). The chaos
 * file is not among them: its runs journal in a directory of their own, so only its own next run recovers a killed
 * run's journal (a lab or cgroup of a killed run that another run's start sweeps first is removed by the same code).
 */
const ALONE = [
  'test/integration/presets-clis.test.ts',
  'test/integration/presets-containers.test.ts',
  'test/integration/process-backend.test.ts',
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
    sequence: { sequencer: LongestFirst },
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
