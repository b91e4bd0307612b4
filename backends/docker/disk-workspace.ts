import { existsSync } from 'node:fs';
import { chmod, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createEnvRoot, ensurePrivateDir, ownerAlive, ownerRecord, readOwner, removeEnvRoot, type EnvRoot } from '../bwrap/workspace.js';
import { findBinary } from '../../core/find-binary.js';

/**
 * The disk-image workspace of a Docker environment: bwrap's sized ext4 image (backends/bwrap/workspace.ts) in the
 * run's scratch directory, loop-mounted on the host at `<stateDir>/<runId>-<envId>/fs` and bound into the
 * container at /work. Its page cache is reclaimable, so the disk limit is reached before the memory limit (a
 * tmpfs volume's pages are charged to the container's memory cgroup and the OOM killer stops a filler first).
 */

export const DEFAULT_DISK_STATE_DIR = '/run/sandcheck/docker-disk';

/** `<runId>-<envId>`: the only names this backend gives workspace roots (envId is 8 hex digits). */
const ENV_KEY = /^[a-z0-9][a-z0-9_.-]{0,40}-[0-9a-f]{8}$/;

export const diskImageName = (key: string): string => `docker-disk-${key}.img`;

/** Why a disk-image workspace cannot be made here (undefined: it can), and mkfs.ext4's path. */
export async function diskImageSupport(): Promise<{ mkfs: string } | { problem: string }> {
  if (process.getuid?.() !== 0) return { problem: 'mounting a disk image needs root' };
  const mkfs = await findBinary('mkfs.ext4');
  if (!mkfs) return { problem: 'mkfs.ext4 is not installed (apt-get install -y e2fsprogs)' };
  if (!existsSync('/dev/loop-control')) return { problem: 'no loop devices (/dev/loop-control is missing)' };
  return { mkfs };
}

export interface DiskWorkspaceRequest {
  stateDir: string;
  scratchDir: string;
  runId: string;
  envId: string;
  bytes: number;
  mkfs: string;
}

/**
 * Makes and mounts the image; returns the environment root (its `work` is the bind source). /work is
 * root-owned 1777 as the tmpfs volume was: sticky, so the box adds files but cannot remove or rename the
 * root-owned read-only inputs (a box-owned /work would let it replace them).
 */
export async function createDiskWorkspace(r: DiskWorkspaceRequest): Promise<EnvRoot> {
  const key = `${r.runId}-${r.envId}`;
  await ensurePrivateDir(r.stateDir, 0o711, 0);
  const image = join(r.scratchDir, diskImageName(key));
  const env = await createEnvRoot(
    join(r.stateDir, key),
    `sandcheck-docker-${key}`,
    { kind: 'disk-image', bytes: r.bytes, image, mkfs: r.mkfs },
    undefined,
    await ownerRecord(r.runId, r.envId, true, image),
  );
  try {
    await chmod(env.work, 0o1777);
  } catch (err) {
    await removeDiskWorkspace(env, `environment ${r.envId}`);
    throw err;
  }
  return env;
}

/** umount (the loop device is autoclear: detached with it), root and image removed; problems, never paths. */
export function removeDiskWorkspace(env: EnvRoot, what: string): Promise<string[]> {
  return removeEnvRoot(env.root, env.mounted, what, env.image);
}

export interface DiskSweepReport {
  removed: string[];
  kept: { name: string; reason: string }[];
}

/**
 * Crash recovery: removes workspace roots under `stateDir` whose owner record names a dead process (or is
 * missing), with their mount, loop device and image. Call it after the dead run's containers are gone.
 */
export async function sweepDiskWorkspaces(stateDir = DEFAULT_DISK_STATE_DIR, keepRunId?: string, dryRun = false): Promise<DiskSweepReport> {
  const report: DiskSweepReport = { removed: [], kept: [] };
  const mounts = (await readFile('/proc/self/mounts', 'utf8').catch(() => '')).split('\n');
  for (const key of await readdir(stateDir).catch(() => [] as string[])) {
    if (!ENV_KEY.test(key) || (keepRunId !== undefined && key.startsWith(`${keepRunId}-`))) continue;
    const root = join(stateDir, key);
    const owner = await readOwner(join(root, 'owner.json'));
    if (owner && (await ownerAlive(owner))) continue;
    if (dryRun) {
      report.removed.push(`workspace ${key}`);
      continue;
    }
    const mounted = mounts.some((l) => l.split(' ')[1] === join(root, 'fs'));
    // Only an image file of this backend's own naming is deleted, whatever the record says.
    const image = owner?.image?.endsWith(`/${diskImageName(key)}`) ? owner.image : undefined;
    const problems = await removeEnvRoot(root, mounted, `workspace ${key}`, image);
    if (problems.length > 0) report.kept.push({ name: `workspace ${key}`, reason: problems.join('; ') });
    else report.removed.push(`workspace ${key}`);
  }
  return report;
}
