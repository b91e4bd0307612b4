import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readStat } from '../shared/host-proc.js';
import { CGROUP_PREFIX, detectCgroups, SIBLING_PREFIXES, type CgroupHierarchy } from './cgroups.js';
import { DEFAULT_STATE_DIR } from './bwrap-backend.js';
import { ownerAlive, readOwner, removeEnvRoot } from './workspace.js';

export interface SweepOptions {
  /** Where the backend keeps environment roots and ownership records (default /run/sandcheck/bwrap). */
  stateDir?: string;
  /** Also SIGKILL the processes of stale cgroups (by default a stale cgroup that still holds processes is kept and reported). */
  kill?: boolean;
  /** The cgroup2 parent the backend was told to use, if not the cgroup2 mount itself. */
  v2Parent?: string;
  /** Only list what would be removed (`sandcheck clean --dry-run`); touch nothing. */
  dryRun?: boolean;
  /**
   * Runs the ownership journal proved dead: an environment of theirs without an owner record (the harness was
   * killed between creating the root and writing the record) is stale, not unowned.
   */
  deadRunIds?: readonly string[];
}

/** `<runId>-<envId>`: the only names this backend gives environments (envId is 8 hex digits). */
const ENV_KEY = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}-[0-9a-f]{8}$/;
/** The throwaway directory detection makes: `probe-<pid>-<6 hex>`. */
const PROBE_KEY = /^probe-(\d+)-[0-9a-f]{6}$/;

export interface SweepReport {
  /** Names of the cgroups (and environment roots) removed. */
  removed: string[];
  /** What was left alone, and why. */
  kept: { name: string; reason: string }[];
}

/**
 * Crash recovery: removes `sandcheck-*` cgroups (and `<stateDir>/<runId>-<envId>` environment roots)
 * whose run is gone: its ownership record names a process that no longer exists (pid + start time +
 * boot id). A cgroup without a record in this state dir is left alone: it may be a live run's that keeps
 * another state dir (its boxes would be killed, its limits lost between two execs); a dead run's is removed
 * by the run's ownership journal instead (harness/ownership). Only empty cgroups are removed unless `kill`
 * is set; nothing outside the sandcheck- prefix (and the optional run id prefix) is ever touched.
 */
export async function sweepStaleCgroups(runIdPrefix?: string, options: SweepOptions = {}): Promise<SweepReport> {
  const stateDir = options.stateDir ?? DEFAULT_STATE_DIR;
  const prefix = `${CGROUP_PREFIX}${runIdPrefix ?? ''}`;
  const report: SweepReport = { removed: [], kept: [] };
  type Standing = 'stale' | 'alive' | 'unowned';
  const dead = new Set(options.deadRunIds ?? []);
  const standing = new Map<string, Standing>();
  const standingOf = async (key: string): Promise<Standing> => {
    const known = standing.get(key);
    if (known !== undefined) return known;
    const probe = PROBE_KEY.exec(key);
    let s: Standing;
    if (probe) {
      s = (await readStat(Number(probe[1]))) === undefined ? 'stale' : 'alive';
    } else {
      const owner = await readOwner(join(stateDir, key, 'owner.json'));
      if (owner !== undefined) s = (await ownerAlive(owner)) ? 'alive' : 'stale';
      else s = dead.has(key.replace(/-[0-9a-f]{8}$/, '')) ? 'stale' : 'unowned';
    }
    standing.set(key, s);
    return s;
  };
  // Names of this backend only: another tool's sandcheck-* directory is never touched (a live Docker run's
  // parent cgroup has no owner record here, and removing it would lose that run's counters).
  const ours = (key: string): boolean => !SIBLING_PREFIXES.some((p) => key.startsWith(p)) && (ENV_KEY.test(key) || PROBE_KEY.test(key));

  // The owner record stays while the environment's cgroup does: the next sweep must still know whose it is.
  const keptCgroup = new Set<string>();
  const hierarchies: CgroupHierarchy[] = [];
  for (const mode of ['v1', 'v2'] as const) {
    const d = await detectCgroups(mode, mode === 'v2' ? options.v2Parent : undefined, false);
    if (d.hierarchy) hierarchies.push(d.hierarchy);
  }
  for (const h of hierarchies) {
    for (const name of (await h.list()).keys()) {
      const key = name.slice(CGROUP_PREFIX.length);
      if (!name.startsWith(prefix) || !ours(key)) continue;
      const s = await standingOf(key);
      if (s !== 'stale') {
        report.kept.push({
          name,
          reason: s === 'alive' ? 'its run is alive' : `no owner record in ${stateDir}: another state dir's run, or its run's journal decides`,
        });
        continue;
      }
      const cg = h.open(name);
      if (options.dryRun) {
        report.removed.push(`cgroup v${h.version} ${name}`);
        continue;
      }
      let pids = await cg.pids();
      if (pids.length > 0 && options.kill) pids = await cg.killAll();
      if (pids.length > 0) {
        report.kept.push({ name, reason: `${pids.length} process(es) still inside (sweep with kill to end them)` });
        keptCgroup.add(key);
        continue;
      }
      const problems = await cg.remove();
      if (problems.length > 0) {
        report.kept.push({ name, reason: problems.join('; ') });
        keptCgroup.add(key);
      } else {
        report.removed.push(`cgroup v${h.version} ${name}`);
      }
    }
  }

  const mounts = (await readFile('/proc/self/mounts', 'utf8').catch(() => '')).split('\n');
  for (const key of await readdir(stateDir).catch(() => [] as string[])) {
    const name = `${CGROUP_PREFIX}${key}`;
    if (!name.startsWith(prefix) || !ENV_KEY.test(key)) continue;
    if ((await standingOf(key)) !== 'stale' || keptCgroup.has(key)) continue;
    const root = join(stateDir, key);
    if (options.dryRun) {
      report.removed.push(`workspace ${key}`);
      continue;
    }
    const mounted = mounts.some((l) => l.split(' ')[1] === join(root, 'fs'));
    const image = (await readOwner(join(root, 'owner.json')))?.image;
    // Only an image file of this backend's own naming is deleted, whatever the record says.
    const problems = await removeEnvRoot(root, mounted, name, image?.endsWith(`/bwrap-disk-${key}.img`) ? image : undefined);
    if (problems.length > 0) report.kept.push({ name: `workspace ${key}`, reason: problems.join('; ') });
    else report.removed.push(`workspace ${key}`);
  }
  return report;
}
