import { mkdir, readdir, realpath, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ResourceReport } from '../../model/backend-contract.js';
import { observedOnly, readV1Counters, type CgroupCounters } from '../../lab/cgroup-counters.js';
import { cgroupMounts, readPids, tryWriteControl } from '../../core/cgroup-files.js';
import { killQuietly } from '../shared/process-kill.js';

/**
 * The launcher's own cgroup (v1 memory, pids, cpu, cpuacct, freezer) with no limits: sandcheck only counts.
 * The tool (or a wrapper around it, like `systemd-run --scope`) may create child cgroups with its own
 * limits; peaks and CPU time are hierarchical in v1, and the event counters of the whole subtree (OOM
 * kills, refused charges, refused forks, throttled periods) are summed, so what the tool's limits did is
 * still seen from outside.
 */
const CONTROLLERS = ['memory', 'pids', 'cpu', 'cpuacct', 'freezer'] as const;
type Controller = (typeof CONTROLLERS)[number];
const MAX_DESCENDANTS = 64;
const KILL_WAIT_MS = 5000;

export type CountingDetection = { roots: Map<Controller, string> } | { reason: string };

/** The v1 controller roots, or why there is no cgroup to count with (v2-only hosts: not supported yet). */
export async function detectCountingRoots(): Promise<CountingDetection> {
  if (process.getuid?.() !== 0) return { reason: 'counting cgroups need root' };
  const roots = new Map<Controller, string>();
  for (const m of await cgroupMounts()) {
    if (m.fstype !== 'cgroup') continue;
    for (const c of CONTROLLERS) if (m.options.includes(c) && !roots.has(c)) roots.set(c, await realpath(m.path).catch(() => m.path));
  }
  if (!roots.has('memory') || !roots.has('pids') || !roots.has('cpuacct'))
    return { reason: 'the cgroup v1 memory, pids and cpuacct controllers are not all mounted (cgroup v2 is not supported by the command backend yet)' };
  return { roots };
}

async function descendants(dir: string, out: string[] = []): Promise<string[]> {
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (!e.isDirectory() || out.length >= MAX_DESCENDANTS) continue;
    const child = join(dir, e.name);
    out.push(child);
    await descendants(child, out);
  }
  return out;
}

async function pidsIn(dirs: readonly string[]): Promise<number[]> {
  const all = new Set<number>();
  for (const d of dirs) for (const p of await readPids(join(d, 'cgroup.procs'))) all.add(p);
  return [...all].sort((a, b) => a - b);
}

const sum = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined && b === undefined ? undefined : (a ?? 0) + (b ?? 0));
const min = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined ? b : b === undefined ? a : Math.min(a, b));
const minus = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined ? undefined : a - (b ?? 0));

export class CountingCgroup {
  readonly procsFiles: readonly string[];
  private constructor(
    readonly name: string,
    private readonly dirs: ReadonlyMap<Controller, string>,
  ) {
    this.procsFiles = [...new Set(dirs.values())].map((d) => join(d, 'cgroup.procs'));
  }

  /** An existing counting cgroup by name (for the crash sweep); nothing is created. */
  static open(roots: ReadonlyMap<Controller, string>, name: string): CountingCgroup {
    const dirs = new Map<Controller, string>();
    for (const [c, root] of roots) dirs.set(c, join(root, name));
    return new CountingCgroup(name, dirs);
  }

  static async create(roots: ReadonlyMap<Controller, string>, name: string): Promise<CountingCgroup> {
    const dirs = new Map<Controller, string>();
    for (const [c, root] of roots) dirs.set(c, join(root, name));
    for (const d of new Set(dirs.values())) await mkdir(d);
    return new CountingCgroup(name, dirs);
  }

  private async allDirs(): Promise<string[]> {
    const out: string[] = [];
    for (const d of new Set(this.dirs.values())) out.push(d, ...(await descendants(d)));
    return out;
  }

  /**
   * `<name>.tool` beside each counted directory: where a tool may keep its own supervisors (podman, conmon) so that
   * they are not counted as the box, yet die and go with it.
   */
  private async toolDirs(): Promise<string[]> {
    const out: string[] = [];
    for (const d of new Set(this.dirs.values())) {
      const t = `${d}.tool`;
      if (await readdir(t).catch(() => undefined)) out.push(t, ...(await descendants(t)));
    }
    return out;
  }

  /** Every process in the cgroup and below it. */
  async pids(): Promise<number[]> {
    return pidsIn(await this.allDirs());
  }

  /** The box's processes and the tool's own (`<name>.tool`). */
  async allPids(): Promise<number[]> {
    return pidsIn([...(await this.allDirs()), ...(await this.toolDirs())]);
  }

  /** Own counters (hierarchical peaks and usage) plus the subtree's events and tightest limits. */
  async counters(): Promise<CgroupCounters> {
    const own = await readV1Counters(this.dirs);
    let acc: CgroupCounters = { ...own };
    for (const c of ['memory', 'pids', 'cpu'] as const) {
      const top = this.dirs.get(c);
      if (top === undefined) continue;
      for (const d of await descendants(top)) {
        const k = await readV1Counters(new Map([[c, d]]));
        acc = {
          ...acc,
          memoryLimitBytes: min(acc.memoryLimitBytes, k.memoryLimitBytes),
          memoryFailcnt: sum(acc.memoryFailcnt, k.memoryFailcnt),
          oomKills: sum(acc.oomKills, k.oomKills),
          pidsLimit: min(acc.pidsLimit, k.pidsLimit),
          pidsMaxEvents: sum(acc.pidsMaxEvents, k.pidsMaxEvents),
          cpuQuotaCores: min(acc.cpuQuotaCores, k.cpuQuotaCores),
          cpuThrottledPeriods: sum(acc.cpuThrottledPeriods, k.cpuThrottledPeriods),
        };
      }
    }
    return observedOnly(acc);
  }

  /** Resets the memory peak (the kernel allows it) and returns the baseline of the event counters. */
  async beginExec(): Promise<CgroupCounters> {
    const mem = this.dirs.get('memory');
    if (mem !== undefined) tryWriteControl(join(mem, 'memory.max_usage_in_bytes'), '0');
    return this.counters();
  }

  async report(baseline: CgroupCounters): Promise<ResourceReport> {
    const now = await this.counters();
    return observedOnly({
      source: `cgroup v1 ${[...this.dirs.keys()].join(',')} (sandcheck's counting cgroup, no limits; the tool's own child cgroups included): ${this.name}`,
      ...now,
      memoryFailcnt: minus(now.memoryFailcnt, baseline.memoryFailcnt),
      oomKills: minus(now.oomKills, baseline.oomKills),
      pidsMaxEvents: minus(now.pidsMaxEvents, baseline.pidsMaxEvents),
      cpuUsageNs: minus(now.cpuUsageNs, baseline.cpuUsageNs),
      cpuThrottledPeriods: minus(now.cpuThrottledPeriods, baseline.cpuThrottledPeriods),
    });
  }

  /** Freeze the subtree (v1 freezer is hierarchical), SIGKILL every member, thaw, wait until empty. */
  async killAll(): Promise<number[]> {
    const freezer = this.dirs.get('freezer');
    const state = freezer === undefined ? undefined : join(freezer, 'freezer.state');
    if (state !== undefined) tryWriteControl(state, 'FROZEN');
    for (let round = 0; round < 3; round++) for (const p of await this.allPids()) killQuietly(p);
    if (state !== undefined) tryWriteControl(state, 'THAWED');
    const until = Date.now() + KILL_WAIT_MS;
    while (Date.now() < until) {
      const left = await this.allPids();
      if (left.length === 0) return [];
      for (const p of left) killQuietly(p);
      await sleep(20);
    }
    return this.allPids();
  }

  /**
   * The same name in the v1 hierarchies sandcheck does not count (cpuset, devices, ...): a tool told to nest its
   * cgroups under the launcher's (podman --cgroup-parent) creates it there too.
   */
  private async strayDirs(): Promise<string[]> {
    const counted = new Set(this.dirs.values());
    const out: string[] = [];
    for (const m of await cgroupMounts()) {
      if (m.fstype !== 'cgroup') continue;
      const d = join(await realpath(m.path).catch(() => m.path), this.name);
      if (counted.has(d) || !(await readdir(d).catch(() => undefined))) continue;
      out.push(d, ...(await descendants(d)));
    }
    return out;
  }

  /** Removes the tool's child cgroups (deepest first), then its own directories. */
  async remove(): Promise<string[]> {
    const problems: string[] = [];
    for (const d of [...(await this.allDirs()), ...(await this.toolDirs()), ...(await this.strayDirs())].sort((a, b) => b.length - a.length)) {
      try {
        await rmdir(d);
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code !== 'ENOENT')
          problems.push(`cgroup ${this.name}${d.includes(`${this.name}/`) ? ` (a child the tool made)` : ''} could not be removed: ${code ?? String(err)}`);
      }
    }
    return problems;
  }
}
