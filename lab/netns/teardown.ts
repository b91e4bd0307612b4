import { stat } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { execa } from 'execa';
import { LabError } from './errors.js';
import { isAliveSync, killNetnsSync, processesInNetns, terminate, type ProcIdentity } from './proc.js';
import { removeOwnership, scratchDirFor, stateFileFor } from './state.js';
import { findTool } from './tools.js';

export interface TeardownTarget {
  readonly name: string;
  readonly path: string;
  readonly stateDir: string;
  /** Processes the lab started that may have left its namespace (e.g. into a sandbox's own). */
  readonly tracked?: readonly ProcIdentity[];
}

export interface TeardownReport {
  readonly signalled: number;
  readonly killed: number;
  /** Pids still alive after SIGKILL; the namespace outlives `ip netns del` while they hold it. */
  readonly survivors: readonly number[];
}

export async function netnsInode(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).ino;
  } catch {
    return undefined;
  }
}

/** Stops every process inside (and every tracked one), deletes the namespace, its record and scratch dir. */
export async function teardownNamespace(target: TeardownTarget, graceMs = 1000): Promise<TeardownReport> {
  const inode = await netnsInode(target.path);
  const inside = inode === undefined ? [] : await processesInNetns(inode);
  const seen = new Set(inside.map((p) => p.pid));
  const procs = [...inside, ...(target.tracked ?? []).filter((p) => !seen.has(p.pid))];
  const result = await terminate(procs, graceMs);
  if (inode !== undefined) {
    const del = await execa(findTool('ip') ?? 'ip', ['netns', 'del', target.name], { reject: false, timeout: 10_000 });
    if (del.exitCode !== 0 && (await netnsInode(target.path)) !== undefined) {
      throw new LabError('LAB_TEARDOWN_FAILED', `ip netns del ${target.name} failed: ${del.stderr.trim()}`, {
        hint: `remove it by hand: ip netns del ${target.name}`,
      });
    }
  }
  await removeOwnership(target.name, target.stateDir);
  return { signalled: result.signalled, killed: result.killed, survivors: result.survivors.map((p) => p.pid) };
}

/** Exit-hook variant: SIGKILL, no waiting, no grace. */
export function teardownNamespaceSync(target: TeardownTarget & { readonly inode: number }): void {
  killNetnsSync(target.inode);
  for (const proc of target.tracked ?? []) {
    try {
      if (isAliveSync(proc)) process.kill(proc.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  spawnSync(findTool('ip') ?? 'ip', ['netns', 'del', target.name], { stdio: 'ignore', timeout: 5000 });
  rmSync(scratchDirFor(target.name, target.stateDir), { recursive: true, force: true });
  rmSync(stateFileFor(target.name, target.stateDir), { force: true });
}
