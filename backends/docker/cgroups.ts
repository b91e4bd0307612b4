import { mkdir, readdir, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { ResourceReport } from '../../model/backend-contract.js';
import { readV1Counters, readV2Counters, type CgroupCounters } from '../../lab/cgroup-counters.js';
import { cgroupMounts, readNumber, readPids, readText, tryWriteControl } from '../../core/cgroup-files.js';
import { CGROUP_NAMES } from '../shared/cgroup-names.js';

/**
 * The container's counters, read from outside: the cgroup directories the host kernel keeps for it.
 *
 * Two places on a cgroup v1 host with a cgroupfs daemon (this machine):
 * - the container's own cgroup (`<parent>/<container id>` in each controller): limits, `oom_kill`,
 *   `pids.events max`. These two counters are not hierarchical in v1, and the directory disappears when
 *   the container stops, so they are sampled while it runs.
 * - a parent cgroup the backend creates per environment and passes as `HostConfig.CgroupParent`: it
 *   outlives the container, and its hierarchical counters (peak memory, CPU time, peak tasks) survive
 *   a container that died (a gVisor sandbox killed by the OOM killer, a timeout kill).
 */

const V1_CONTROLLERS = ['memory', 'pids', 'cpu', 'cpuacct'] as const;
type V1Controller = (typeof V1_CONTROLLERS)[number];

export const PARENT_PREFIX = CGROUP_NAMES.dockerParent;

/** Every cgroup hierarchy's mount point (v1 controllers, named hierarchies, the v2 tree). */
export async function allHierarchyRoots(): Promise<string[]> {
  return [...new Set((await cgroupMounts()).map((m) => m.path))];
}

async function v1Dirs(): Promise<Map<V1Controller, string> | undefined> {
  const mounts = await cgroupMounts();
  const dirs = new Map<V1Controller, string>();
  for (const c of V1_CONTROLLERS) {
    const m = mounts.find((x) => x.fstype === 'cgroup' && x.options.includes(c));
    if (m) dirs.set(c, m.path);
  }
  return dirs.has('memory') ? dirs : undefined;
}

/** cgroup v1 with the memory controller mounted and writable: per-environment parents can be used. */
export async function canUseV1Parents(): Promise<string | undefined> {
  const dirs = await v1Dirs();
  if (!dirs) return 'no cgroup v1 memory controller is mounted';
  if (process.getuid?.() !== 0) return 'creating cgroups needs root';
  return undefined;
}

export interface ParentCgroup {
  /** For HostConfig.CgroupParent: "/<name>". */
  readonly parentPath: string;
  readonly name: string;
  /** Removes the directory in every hierarchy where it exists (runc creates it in those we did not). */
  remove(): Promise<string[]>;
  readPeaks(): Promise<ParentPeaks>;
  resetPeaks(): Promise<void>;
}

export interface ParentPeaks {
  memoryPeakBytes?: number;
  cpuUsageNs?: number;
  pidsPeak?: number;
}

export async function createParentCgroup(name: string): Promise<ParentCgroup> {
  const dirs = await v1Dirs();
  if (!dirs) throw new Error('no cgroup v1 memory controller is mounted');
  const made = new Map<V1Controller, string>();
  for (const [c, root] of dirs) {
    const d = join(root, name);
    await mkdir(d, { recursive: false }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
    made.set(c, d);
  }
  const file = (c: V1Controller, f: string): string | undefined => {
    const d = made.get(c);
    return d === undefined ? undefined : join(d, f);
  };
  return {
    parentPath: `/${name}`,
    name,
    async remove() {
      const problems: string[] = [];
      for (const root of await allHierarchyRoots()) {
        const d = join(root, name);
        if ((await readText(join(d, 'cgroup.procs'))) === undefined) continue;
        // runc removes the container's own directory when the container goes; wait briefly for that.
        let lastErr = '';
        for (let i = 0; i < 50; i++) {
          for (const child of await readdir(d, { withFileTypes: true }).catch(() => [])) {
            if (child.isDirectory()) await rmdir(join(d, child.name)).catch(() => undefined);
          }
          try {
            await rmdir(d);
            lastErr = '';
            break;
          } catch (err) {
            lastErr = (err as NodeJS.ErrnoException).code ?? String(err);
            if (lastErr === 'ENOENT') {
              lastErr = '';
              break;
            }
            await new Promise((r) => setTimeout(r, 20));
          }
        }
        if (lastErr) problems.push(`cgroup ${d} could not be removed (${lastErr})`);
      }
      return problems;
    },
    async readPeaks() {
      const mem = file('memory', 'memory.max_usage_in_bytes');
      const cpu = file('cpuacct', 'cpuacct.usage');
      const pids = file('pids', 'pids.peak');
      const out: ParentPeaks = {};
      const m = mem ? await readNumber(mem) : undefined;
      const c = cpu ? await readNumber(cpu) : undefined;
      const p = pids ? await readNumber(pids) : undefined;
      if (m !== undefined) out.memoryPeakBytes = m;
      if (c !== undefined) out.cpuUsageNs = c;
      if (p !== undefined) out.pidsPeak = p;
      return out;
    },
    async resetPeaks() {
      const mem = file('memory', 'memory.max_usage_in_bytes');
      if (mem) tryWriteControl(mem, '0');
    },
  };
}

export interface ContainerCgroup {
  readonly version: 1 | 2;
  /** For the report's `source`. */
  readonly describe: string;
  /** Host pids in the container's cgroup. */
  pids(): Promise<number[]>;
  /** Counters of the container's own cgroup at one instant; undefined when the directory is gone (the container stopped). */
  sample(): Promise<CgroupCounters | undefined>;
  resetPeaks(): Promise<void>;
}

function parseProcCgroup(text: string): { v1: Map<string, string>; v2: string | undefined } {
  const v1 = new Map<string, string>();
  let v2: string | undefined;
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    const [, , controllers, path] = m;
    if (controllers === '') v2 = path;
    else for (const c of (controllers ?? '').split(',')) v1.set(c, path ?? '/');
  }
  return { v1, v2 };
}

/**
 * Finds the cgroup of a container from one of its host processes (`State.Pid`). Refuses (undefined) unless
 * the path names the container id: that proves the daemon runs on this machine, so the counters are its.
 */
export async function locateContainerCgroup(pid: number, containerId: string): Promise<ContainerCgroup | undefined> {
  const text = await readText(`/proc/${pid}/cgroup`);
  if (text === undefined) return undefined;
  const { v1, v2 } = parseProcCgroup(text);
  const mounts = await cgroupMounts();
  const memPath = v1.get('memory');
  if (memPath !== undefined && memPath.includes(containerId)) {
    const dirs = new Map<V1Controller, string>();
    for (const c of V1_CONTROLLERS) {
      const p = v1.get(c);
      const m = mounts.find((x) => x.fstype === 'cgroup' && x.options.includes(c));
      if (p !== undefined && m) dirs.set(c, join(m.path, p));
    }
    return v1Cgroup(dirs, memPath);
  }
  if (v2 !== undefined && v2.includes(containerId)) {
    const m = mounts.find((x) => x.fstype === 'cgroup2');
    if (!m) return undefined;
    return v2Cgroup(join(m.path, v2), v2);
  }
  return undefined;
}

function v1Cgroup(dirs: Map<V1Controller, string>, path: string): ContainerCgroup {
  const f = (c: V1Controller, name: string): string => join(dirs.get(c) ?? '/nonexistent', name);
  return {
    version: 1,
    describe: `cgroup v1 memory,pids,cpu,cpuacct: ${path}`,
    pids: () => readPids(f('memory', 'cgroup.procs')),
    async sample() {
      // The limit file goes with the container: then there is nothing to sample.
      if ((await readNumber(f('memory', 'memory.limit_in_bytes'))) === undefined) return undefined;
      return readV1Counters(dirs);
    },
    async resetPeaks() {
      tryWriteControl(f('memory', 'memory.max_usage_in_bytes'), '0');
      tryWriteControl(f('memory', 'memory.failcnt'), '0');
    },
  };
}

function v2Cgroup(dir: string, path: string): ContainerCgroup {
  const f = (name: string): string => join(dir, name);
  return {
    version: 2,
    describe: `cgroup v2: ${path}`,
    pids: () => readPids(f('cgroup.procs')),
    async sample() {
      if ((await readText(f('memory.events'))) === undefined) return undefined;
      return readV2Counters(dir);
    },
    async resetPeaks() {
      // cgroup v2 peaks cannot be reset (memory.peak only per open file): they cover the environment's life.
    },
  };
}

/**
 * Follows one exec: a baseline before, samples while it runs (the container's cgroup may vanish if the
 * container dies), and the parent's hierarchical peaks at the end. Differences for counters that only grow.
 */
export class ExecCounters {
  private baseline: CgroupCounters | undefined;
  private latest: CgroupCounters | undefined;
  private maxOom = 0;
  private maxPidsEvents = 0;
  private maxPeak = 0;
  private maxPidsPeak = 0;
  private parentCpuBase: number | undefined;

  constructor(
    private readonly child: ContainerCgroup | undefined,
    private readonly parent: ParentCgroup | undefined,
    /** gVisor: the pids cgroup counts the sandbox's host threads, not the box's processes. */
    private readonly countPids: boolean,
  ) {}

  get available(): boolean {
    return this.child !== undefined || this.parent !== undefined;
  }

  async begin(): Promise<void> {
    await this.child?.resetPeaks();
    await this.parent?.resetPeaks();
    this.baseline = await this.child?.sample();
    this.latest = this.baseline;
    this.parentCpuBase = (await this.parent?.readPeaks())?.cpuUsageNs;
  }

  async sample(): Promise<void> {
    const s = await this.child?.sample();
    if (!s) return;
    this.latest = s;
    this.maxOom = Math.max(this.maxOom, (s.oomKills ?? 0) - (this.baseline?.oomKills ?? 0));
    this.maxPidsEvents = Math.max(this.maxPidsEvents, (s.pidsMaxEvents ?? 0) - (this.baseline?.pidsMaxEvents ?? 0));
    this.maxPeak = Math.max(this.maxPeak, s.memoryPeakBytes ?? 0);
    this.maxPidsPeak = Math.max(this.maxPidsPeak, s.pidsPeak ?? 0);
  }

  /** True when the OOM killer has struck during this exec (as far as sampled so far). */
  get oomSeen(): boolean {
    return this.maxOom > 0;
  }

  async end(): Promise<ResourceReport | undefined> {
    await this.sample();
    if (!this.available) return undefined;
    const parent = await this.parent?.readPeaks();
    const b = this.baseline;
    const l = this.latest;
    const r: ResourceReport = {
      source: [this.child?.describe, this.parent ? `parent cgroup ${this.parent.name} (hierarchical peaks; outlives the container)` : undefined]
        .filter(Boolean)
        .join('; '),
    };
    if (l?.memoryLimitBytes !== undefined) r.memoryLimitBytes = l.memoryLimitBytes;
    const peak = Math.max(this.maxPeak, parent?.memoryPeakBytes ?? 0);
    if (peak > 0) r.memoryPeakBytes = peak;
    if (l?.memoryFailcnt !== undefined) r.memoryFailcnt = Math.max(0, l.memoryFailcnt - (b?.memoryFailcnt ?? 0));
    if (l?.oomKills !== undefined) r.oomKills = this.maxOom;
    if (this.countPids) {
      if (l?.pidsLimit !== undefined) r.pidsLimit = l.pidsLimit;
      const pp = Math.max(this.maxPidsPeak, parent?.pidsPeak ?? 0);
      if (pp > 0) r.pidsPeak = pp;
      if (l?.pidsMaxEvents !== undefined) r.pidsMaxEvents = this.maxPidsEvents;
    }
    if (l?.cpuQuotaCores !== undefined) r.cpuQuotaCores = l.cpuQuotaCores;
    if (parent?.cpuUsageNs !== undefined && this.parentCpuBase !== undefined) r.cpuUsageNs = parent.cpuUsageNs - this.parentCpuBase;
    else if (l?.cpuUsageNs !== undefined) r.cpuUsageNs = l.cpuUsageNs - (b?.cpuUsageNs ?? 0);
    if (l?.cpuThrottledPeriods !== undefined) r.cpuThrottledPeriods = l.cpuThrottledPeriods - (b?.cpuThrottledPeriods ?? 0);
    return r;
  }
}
