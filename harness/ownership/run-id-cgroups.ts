import { existsSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { processStartTime } from '../../core/ownership-journal.js';
import { runCgroupPrefixes } from '../../backends/shared/cgroup-names.js';

const CGROUP_ROOT = '/sys/fs/cgroup';

/**
 * The cgroups a run's backends name after it (`runCgroupPrefixes`: bwrap's, a Docker cgroup parent with the
 * containers' cgroups inside, the command backend's, the control's CPU meters). Only called for a run the ownership journal
 * proves dead: these names carry that run's id, so they are its own, whether or not a backend journalled them.
 */
export function runIdCgroups(runId: string): string[] {
  const names = runCgroupPrefixes(runId);
  const roots = [CGROUP_ROOT, ...(existsSync(`${CGROUP_ROOT}/cgroup.controllers`) ? [] : readdirSync(CGROUP_ROOT).map((c) => join(CGROUP_ROOT, c)))];
  const found: string[] = [];
  for (const root of roots) {
    let entries: string[];
    try {
      entries = readdirSync(root, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      continue;
    }
    for (const name of entries) if (names.some((n) => name.startsWith(n))) found.push(join(root, name));
  }
  return found;
}

function subtree(path: string): string[] {
  const out = [path];
  for (const e of readdirSync(path, { withFileTypes: true })) if (e.isDirectory()) out.push(...subtree(join(path, e.name)));
  return out;
}

/** Kills every process in the cgroup and below, then removes the directories deepest first. */
export async function removeCgroupTree(path: string): Promise<void> {
  if (!existsSync(path)) return;
  if (existsSync(join(path, 'cgroup.kill'))) writeFileSync(join(path, 'cgroup.kill'), '1');
  for (let round = 0; round < 20; round++) {
    let left = 0;
    for (const dir of subtree(path)) {
      for (const pid of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
        left++;
        if (processStartTime(Number(pid)) === undefined) continue;
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
    if (left === 0) break;
    await sleep(50);
  }
  for (const dir of subtree(path).reverse()) {
    for (let i = 0; ; i++) {
      try {
        rmdirSync(dir);
        break;
      } catch (err) {
        if (i >= 20) throw err;
        await sleep(50);
      }
    }
  }
}
