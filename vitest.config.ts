import { defineConfig } from 'vitest/config';
import { LongestFirst } from './test/helpers/longest-first.js';

/**
 * Two tiers. `npm test` (fast, about 10 minutes here): the unit files and the host files that prove each backend
 * (bwrap, Docker, command, process, rpc) and each probe family (network lab, escapes, exposure, posture, export,
 * resources, adapters, the CLI) once. `npm run test:full`: the rest, the long runs: whole suites per backend and
 * preset, chaos, load stability, the CI examples. `.ci/run` runs both.
 */
const FAST_HOST = [
  'test/integration/bwrap-backend.test.ts',
  'test/integration/bwrap-weakened.test.ts',
  'test/integration/docker-backend.test.ts',
  'test/integration/docker-parts.test.ts',
  'test/integration/command-backend.test.ts',
  'test/integration/command-exporter.test.ts',
  'test/integration/network-lab.test.ts',
  'test/integration/lab-netns.test.ts',
  'test/integration/lab-netns-parse.test.ts',
  'test/integration/lab-netns-witness.test.ts',
  'test/integration/metadata-payload-redaction.test.ts',
  'test/integration/canary-channels.test.ts',
  'test/integration/escapes-local.test.ts',
  'test/integration/exposure-bwrap.test.ts',
  'test/integration/posture-local.test.ts',
  'test/integration/credential-paths.test.ts',
  'test/integration/export-stage.test.ts',
  'test/integration/probe-controls.test.ts',
  'test/integration/adapter-check.test.ts',
  'test/integration/adapter-counters.test.ts',
  'test/integration/mount-helper.test.ts',
  'test/integration/state-root.test.ts',
  'test/integration/report-atomic-write.test.ts',
  'test/e2e/cli.test.ts',
  'test/e2e/cli-bundle.test.ts',
  'test/e2e/gate.test.ts',
  'test/e2e/labels-compare.test.ts',
  'test/e2e/list-threats.test.ts',
  'test/e2e/non-root.test.ts',
  'test/e2e/report-html-cards.test.ts',
  // alone (below)
  'test/integration/process-backend.test.ts',
  'test/integration/host-sampler.test.ts',
  'test/e2e/rpc-adapter.test.ts',
  'test/e2e/crash-recovery.test.ts',
  'test/e2e/signal-teardown.test.ts',
];

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
const FULL_HOST = HOST;
const notIn = (list: readonly string[]) => (f: string) => !list.includes(f);

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
        test: { name: 'host', include: FAST_HOST.filter(notIn(ALONE)), maxWorkers: 2, sequence: { groupOrder: 1 } },
      },
      {
        extends: true,
        test: { name: 'alone', include: FAST_HOST.filter((f) => ALONE.includes(f)), maxWorkers: 1, sequence: { groupOrder: 2 } },
      },
      {
        extends: true,
        test: { name: 'full', include: FULL_HOST, exclude: [...FAST_HOST, ...ALONE], maxWorkers: 2, sequence: { groupOrder: 3 } },
      },
      {
        extends: true,
        test: { name: 'full-alone', include: ALONE.filter(notIn(FAST_HOST)), maxWorkers: 1, sequence: { groupOrder: 4 } },
      },
    ],
  },
});
