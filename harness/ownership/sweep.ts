import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage } from '../../core/errors.js';
import { LAB_STATE_DIR } from '../../lab/netns/state.js';
import { teardownNamespace } from '../../lab/netns/teardown.js';
import { removeCgroupTree, runIdCgroups } from './run-id-cgroups.js';
import { invalidateKeys, listKeys } from '../../lab/keyring.js';
import {
  defaultJournalDir,
  ownedPathState,
  processStartTime,
  readBootIdSync,
  readJournals,
  removeOwnedPath,
  resourceKey,
  type JournalEntry,
  type OwnedResource,
} from '../../core/ownership-journal.js';

/** A backend's own crash sweep (bwrap cgroups and workspaces, a private dockerd, …) run with the journal sweep. */
export interface SweepHook {
  name: string;
  /**
   * With dryRun: only list what would be removed. deadRuns: the runs the journal proved dead in this sweep, so
   * a backend may take what carries their id, though no record of its own says so (a kill between mkdir and
   * the owner record).
   */
  sweep(dryRun: boolean, deadRuns: readonly string[]): Promise<{ removed: readonly string[] }>;
}

export interface OwnershipSweepReport {
  /** Runs whose owner is gone and whose journal was processed. */
  deadRuns: string[];
  /** What was removed (or, on a dry run, would be). */
  removed: string[];
  /** What could not be removed, and why. */
  kept: { what: string; reason: string }[];
}

function ownerAlive(e: JournalEntry, bootId: string): boolean {
  return e.owner.bootId === bootId && processStartTime(e.owner.pid) === e.owner.startTime;
}

function unescapeMount(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** Mount points as this process sees them (mountinfo field 5). */
export function mountPoints(): string[] {
  try {
    return readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((l) => l.split(' ')[4])
      .filter((p): p is string => p !== undefined && p.length > 0)
      .map(unescapeMount);
  } catch {
    return [];
  }
}

const under = (path: string, root: string): boolean => path === root || path.startsWith(`${root}/`);

/** Every record names something of its own run: a tampered journal cannot point at another run's or the host's files. */
function carriesRunId(r: OwnedResource, runId: string): boolean {
  if (r.kind === 'process') return true;
  if (r.kind === 'netns') return r.name === `sc-${runId}`;
  if (r.kind === 'key') return r.description.startsWith(`sandcheck-decoy:${runId}:`);
  const named = r.path.split('/').some((part) => part.includes(runId));
  // A socket or file at a path the user chose is ours by its recorded inode (and a file by its content) instead.
  if (r.kind === 'socket') return named || r.inode !== undefined;
  if (r.kind === 'file') return named || (r.inode !== undefined && r.sha256 !== undefined);
  return named;
}

async function removeCgroup(path: string): Promise<void> {
  if (!existsSync(path)) return;
  if (existsSync(`${path}/cgroup.kill`)) writeFileSync(`${path}/cgroup.kill`, '1');
  else {
    for (const pid of readFileSync(`${path}/cgroup.procs`, 'utf8').split('\n').filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
  for (let i = 0; ; i++) {
    try {
      rmdirSync(path);
      return;
    } catch (err) {
      if (i >= 20) throw err;
      await sleep(50);
    }
  }
}

async function removeOne(r: OwnedResource): Promise<'removed' | 'gone'> {
  switch (r.kind) {
    case 'process': {
      if (processStartTime(r.pid) !== r.startTime) return 'gone';
      process.kill(r.pid, 'SIGKILL');
      for (let i = 0; i < 40 && processStartTime(r.pid) === r.startTime; i++) await sleep(25);
      return 'removed';
    }
    case 'mount': {
      if (!mountPoints().includes(r.path)) return 'gone';
      const res = spawnSync('umount', ['-l', r.path], { encoding: 'utf8', timeout: 10_000 });
      if (res.status !== 0) throw new Error(`umount -l failed: ${(res.stderr ?? '').trim()}`);
      return 'removed';
    }
    case 'netns': {
      const path = `/run/netns/${r.name}`;
      const exists = existsSync(path);
      await teardownNamespace({ name: r.name, path, stateDir: LAB_STATE_DIR }, 500);
      return exists ? 'removed' : 'gone';
    }
    case 'cgroup': {
      if (!existsSync(r.path)) return 'gone';
      await removeCgroup(r.path);
      return 'removed';
    }
    case 'key': {
      if (listKeys(r.description).length === 0) return 'gone';
      const left = await invalidateKeys(r.description);
      if (left.length > 0) throw new Error('the kernel still lists it after KEYCTL_INVALIDATE');
      return 'removed';
    }
    case 'dir': {
      if (!existsSync(r.path)) return 'gone';
      // Never follow rm into a mount that is still there (a bind of a host directory would lose its files).
      const inside = mountPoints().filter((m) => under(m, r.path));
      if (inside.length > 0) throw new Error(`still mounted inside: ${inside.join(', ')}`);
      rmSync(r.path, { recursive: true, force: true });
      return 'removed';
    }
    case 'socket':
    case 'file':
      return removeOwnedPath(r);
  }
}

function stillThere(r: OwnedResource): boolean {
  switch (r.kind) {
    case 'process':
      return processStartTime(r.pid) === r.startTime;
    case 'mount':
      return mountPoints().includes(r.path);
    case 'netns':
      return existsSync(`/run/netns/${r.name}`);
    case 'key':
      return listKeys(r.description).length > 0;
    case 'socket':
    case 'file':
      try {
        return ownedPathState(r) === 'ours';
      } catch {
        return true; // unreadable here: the real sweep reports why it stays
      }
    default:
      return existsSync(r.path);
  }
}

const ORDER: readonly OwnedResource['kind'][] = ['process', 'key', 'mount', 'netns', 'cgroup', 'socket', 'file', 'dir'];

/** A journal directory another user could write into is not trusted. */
function trustedDir(dir: string): string | undefined {
  try {
    const st = statSync(dir);
    const uid = process.getuid?.();
    if (uid !== undefined && st.uid !== uid && st.uid !== 0) return `owned by uid ${st.uid}`;
    if ((st.mode & 0o022) !== 0) return 'writable by others';
    return undefined;
  } catch {
    return undefined;
  }
}

/**
 * Removes everything owned by runs whose process is gone (pid + start time + boot id), by recorded
 * identity only; then runs the backends' own sweeps. A dry run lists and touches nothing.
 */
export async function sweepDeadRuns(
  options: { dir?: string; dryRun?: boolean; hooks?: readonly SweepHook[]; keepRunId?: string } = {},
): Promise<OwnershipSweepReport> {
  const dir = options.dir ?? defaultJournalDir();
  const report: OwnershipSweepReport = { deadRuns: [], removed: [], kept: [] };
  const distrust = trustedDir(dir);
  if (distrust) {
    report.kept.push({ what: `journal directory ${dir}`, reason: `not trusted (${distrust})` });
    return report;
  }
  const bootId = readBootIdSync();
  for (const entry of await readJournals(dir)) {
    if (entry.owner.runId === options.keepRunId || ownerAlive(entry, bootId)) continue;
    report.deadRuns.push(entry.owner.runId);
    let failed = false;
    const ordered = [...entry.live].sort((a, b) => ORDER.indexOf(a.kind) - ORDER.indexOf(b.kind));
    for (const r of ordered) {
      const what = `${entry.owner.runId}: ${resourceKey(r)}`;
      if (!carriesRunId(r, entry.owner.runId)) {
        report.kept.push({ what, reason: 'the record does not name its run: not provably ours' });
        continue;
      }
      if (options.dryRun) {
        if (stillThere(r)) report.removed.push(what);
        continue;
      }
      try {
        if ((await removeOne(r)) === 'removed') report.removed.push(what);
      } catch (err) {
        failed = true;
        report.kept.push({ what, reason: errorMessage(err) });
      }
    }
    // What the backends made without journalling it yet (box cgroups, containers' cgroups) carries the run id.
    for (const path of runIdCgroups(entry.owner.runId)) {
      const what = `${entry.owner.runId}: cgroup ${path}`;
      if (options.dryRun) {
        report.removed.push(what);
        continue;
      }
      try {
        await removeCgroupTree(path);
        report.removed.push(what);
      } catch (err) {
        failed = true;
        report.kept.push({ what, reason: errorMessage(err) });
      }
    }
    if (!options.dryRun && !failed) rmSync(entry.path, { force: true });
  }
  for (const hook of options.hooks ?? []) {
    try {
      const r = await hook.sweep(options.dryRun === true, report.deadRuns);
      report.removed.push(...r.removed.map((x) => `${hook.name}: ${x}`));
    } catch (err) {
      report.kept.push({ what: hook.name, reason: errorMessage(err) });
    }
  }
  return report;
}
