import { errorMessage } from '../../core/errors.js';
import { ownerAlive } from '../shared/process-owner.js';
import type { DockerClient } from './client.js';
import { LABEL_OWNER, LABEL_RUN } from './labels.js';
import { allHierarchyRoots, PARENT_PREFIX } from './cgroups.js';
import { parseOwner } from './host.js';
import { DEFAULT_DISK_STATE_DIR, sweepDiskWorkspaces } from './disk-workspace.js';
import { readdir, rmdir } from 'node:fs/promises';
import { join } from 'node:path';

export interface DockerSweepOptions {
  /** Only runs whose id starts with this. */
  runIdPrefix?: string;
  /** Never touch this run (the current one). */
  keepRunId?: string;
  /** Where disk-image workspaces are mounted (default /run/sandcheck/docker-disk); swept for a local daemon. */
  diskStateDir?: string;
}

export interface DockerSweepReport {
  removed: string[];
  kept: { name: string; reason: string }[];
}

/**
 * Crash recovery on a daemon: removes containers and volumes labelled `sandcheck.run` whose owner (the
 * `sandcheck.owner` label: pid, start time, boot id of the harness) is gone. Nothing without both labels
 * is touched, nor anything of a live run. Images are left alone (they are a cache, keyed by content).
 * Then removes empty per-environment parent cgroups of dead runs on this machine.
 */
export async function sweepDockerLeftovers(client: DockerClient, options: DockerSweepOptions = {}): Promise<DockerSweepReport> {
  const report: DockerSweepReport = { removed: [], kept: [] };
  const deadRuns = new Set<string>();
  const isStale = async (labels: Record<string, string>): Promise<boolean> => {
    const run = labels[LABEL_RUN];
    if (run === undefined || run === options.keepRunId) return false;
    if (options.runIdPrefix !== undefined && !run.startsWith(options.runIdPrefix)) return false;
    const owner = parseOwner(labels[LABEL_OWNER]);
    if (!owner) return false;
    const dead = !(await ownerAlive(owner));
    if (dead) deadRuns.add(run);
    return dead;
  };
  for (const c of await client.listContainers([LABEL_RUN, LABEL_OWNER])) {
    if (!(await isStale(c.labels))) continue;
    try {
      await client.removeContainer(c.id);
      report.removed.push(`container ${c.name}`);
    } catch (err) {
      report.kept.push({ name: `container ${c.name}`, reason: errorMessage(err) });
    }
  }
  for (const v of await client.listVolumes([LABEL_RUN, LABEL_OWNER])) {
    if (!(await isStale(v.labels))) continue;
    try {
      await client.removeVolume(v.name);
      report.removed.push(`volume ${v.name}`);
    } catch (err) {
      report.kept.push({ name: `volume ${v.name}`, reason: errorMessage(err) });
    }
  }
  for (const n of await client.listNetworks([LABEL_RUN, LABEL_OWNER])) {
    if (!(await isStale(n.labels))) continue;
    try {
      await client.removeNetwork(n.id);
      report.removed.push(`network ${n.name}`);
    } catch (err) {
      report.kept.push({ name: `network ${n.name}`, reason: errorMessage(err) });
    }
  }
  if (client.local) {
    // After the containers: a dead run's disk-image workspaces (mount, loop device, image file).
    const disks = await sweepDiskWorkspaces(options.diskStateDir ?? DEFAULT_DISK_STATE_DIR, options.keepRunId);
    report.removed.push(...disks.removed);
    report.kept.push(...disks.kept);
    for (const root of await allHierarchyRoots()) {
      for (const entry of await readdir(root).catch(() => [] as string[])) {
        if (!entry.startsWith(PARENT_PREFIX)) continue;
        const run = [...deadRuns].find((r) => entry.startsWith(`${PARENT_PREFIX}${r}-`));
        if (run === undefined) continue;
        const d = join(root, entry);
        for (const child of await readdir(d, { withFileTypes: true }).catch(() => [])) {
          if (child.isDirectory()) await rmdir(join(d, child.name)).catch(() => undefined);
        }
        try {
          await rmdir(d);
          report.removed.push(`cgroup ${d}`);
        } catch (err) {
          report.kept.push({ name: `cgroup ${d}`, reason: errorMessage(err) });
        }
      }
    }
  }
  return report;
}
