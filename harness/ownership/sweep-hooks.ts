import { existsSync } from 'node:fs';
import { sweepStaleLabs } from '../../lab/netns/sweep.js';
import type { SweepHook } from './sweep.js';

// backends/docker/lab-daemon.ts DEFAULT_LAB_DAEMON_ROOT; checked here so dockerode is loaded only when there is something to sweep.
const LAB_DAEMON_ROOT = '/var/lib/sandcheck/lab-docker';
// backends/docker/disk-workspace.ts DEFAULT_DISK_STATE_DIR and backends/command/index.ts DEFAULT_STATE_DIR.
const DOCKER_DISK_ROOT = '/run/sandcheck/docker-disk';
const COMMAND_STATE_ROOT = '/run/sandcheck/command';

/** The existing crash sweeps of the lab and the backends, run at the start of every run and by `sandcheck clean`. */
export function defaultSweepHooks(): SweepHook[] {
  return [
    {
      name: 'lab',
      async sweep(dryRun) {
        const r = await sweepStaleLabs({ dryRun });
        return { removed: [...r.removed.map((n) => `namespace ${n}`), ...r.staleRecords.map((n) => `record of ${n}`)] };
      },
    },
    {
      name: 'bwrap',
      async sweep(dryRun, deadRuns) {
        const { sweepStaleCgroups } = await import('../../backends/bwrap/sweep.js');
        // Stale = its owner record names a process that is gone, or it has none and its run is proven dead;
        // only then are the processes inside killed.
        return { removed: (await sweepStaleCgroups(undefined, { kill: true, dryRun, deadRunIds: deadRuns })).removed };
      },
    },
    {
      name: 'docker lab daemon',
      async sweep(dryRun) {
        if (!existsSync(LAB_DAEMON_ROOT)) return { removed: [] };
        const { sweepStaleLabDaemons } = await import('../../backends/docker/lab-daemon.js');
        return { removed: (await sweepStaleLabDaemons(undefined, dryRun)).removed };
      },
    },
    {
      name: 'process control cpu groups',
      async sweep(dryRun) {
        const { sweepEmptyCpuMeters } = await import('../../backends/process/cpu-meter.js');
        return { removed: await sweepEmptyCpuMeters(undefined, dryRun) };
      },
    },
    {
      name: 'docker disk workspaces',
      async sweep(dryRun) {
        if (!existsSync(DOCKER_DISK_ROOT)) return { removed: [] };
        const { sweepDiskWorkspaces } = await import('../../backends/docker/disk-workspace.js');
        return { removed: (await sweepDiskWorkspaces(DOCKER_DISK_ROOT, undefined, dryRun)).removed };
      },
    },
    {
      name: 'command backend',
      async sweep(dryRun, deadRuns) {
        if (!existsSync(COMMAND_STATE_ROOT)) return { removed: [] };
        const { sweepStaleCommandEnvironments } = await import('../../backends/command/sweep.js');
        return { removed: (await sweepStaleCommandEnvironments(COMMAND_STATE_ROOT, dryRun, deadRuns)).removed };
      },
    },
  ];
}
