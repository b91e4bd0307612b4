import { readdir } from 'node:fs/promises';
import { LAB_NAME_PATTERN } from './netns.js';
import { isAlive, readBootId } from './proc.js';
import { LAB_STATE_DIR, listOwnershipNames, readOwnership, removeOwnership, type LabOwnership } from './state.js';
import { netnsInode, teardownNamespace } from './teardown.js';

export interface SweepReport {
  /** Namespaces of dead runs, now deleted (with everything that was still running inside). */
  readonly removed: readonly string[];
  /** Namespaces whose owner is alive: left alone. */
  readonly kept: readonly string[];
  /** `sc-*` namespaces with no readable ownership record: not provably ours, so left alone. */
  readonly unowned: readonly string[];
  /** Ownership records of dead runs whose namespace was already gone: deleted. */
  readonly staleRecords: readonly string[];
  readonly errors: readonly { readonly name: string; readonly message: string }[];
}

async function ownerAlive(record: LabOwnership, bootId: string): Promise<boolean> {
  return record.bootId === bootId && (await isAlive({ pid: record.ownerPid, startTime: record.ownerStartTime }));
}

async function labNamespaces(): Promise<string[]> {
  try {
    return (await readdir('/run/netns')).filter((n) => LAB_NAME_PATTERN.test(n));
  } catch {
    return [];
  }
}

/** Removes `sc-*` lab namespaces whose owning run is dead; live runs' labs and unrecorded ones are left alone. */
export async function sweepStaleLabs(options: { stateDir?: string; graceMs?: number; dryRun?: boolean } = {}): Promise<SweepReport> {
  const stateDir = options.stateDir ?? LAB_STATE_DIR;
  const bootId = await readBootId();
  const report = {
    removed: [] as string[],
    kept: [] as string[],
    unowned: [] as string[],
    staleRecords: [] as string[],
    errors: [] as { name: string; message: string }[],
  };
  const recorded = (await listOwnershipNames(stateDir)).filter((n) => LAB_NAME_PATTERN.test(n));
  const names = new Set([...(await labNamespaces()), ...recorded]);
  for (const name of [...names].sort()) {
    const path = `/run/netns/${name}`;
    const record = await readOwnership(name, stateDir);
    const exists = (await netnsInode(path)) !== undefined;
    if (typeof record !== 'object') {
      if (exists) report.unowned.push(name);
      continue;
    }
    if (await ownerAlive(record, bootId)) {
      if (exists) report.kept.push(name);
      continue;
    }
    if (options.dryRun) {
      (exists ? report.removed : report.staleRecords).push(name);
      continue;
    }
    if (!exists) {
      await removeOwnership(name, stateDir);
      report.staleRecords.push(name);
      continue;
    }
    try {
      await teardownNamespace({ name, path, stateDir }, options.graceMs ?? 500);
      report.removed.push(name);
    } catch (err) {
      report.errors.push({ name, message: err instanceof Error ? err.message : String(err) });
    }
  }
  return report;
}
