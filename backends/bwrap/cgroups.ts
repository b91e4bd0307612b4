import { randomBytes } from 'node:crypto';
import { constants, existsSync, mkdirSync, rmdirSync } from 'node:fs';
import { access, mkdir, readdir, realpath, rmdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ResourceReport } from '../../model/backend-contract.js';
import { observedOnly, readV1Counters, readV2Counters, type CgroupCounters } from '../../lab/cgroup-counters.js';
import { cgroupMounts, parseKeyed, readPids, readText, tryWriteControl, writeControl, type CgroupMount } from '../../core/cgroup-files.js';
import { killQuietly } from '../shared/process-kill.js';
import { BWRAP_SIBLING_PREFIXES, CGROUP_NAMES } from '../shared/cgroup-names.js';

/**
 * Per-environment cgroups, driven from outside the box: cgroup v1 (one directory per controller, the
 * hybrid layout of Debian hosts without systemd) and cgroup v2 (one directory in a cgroup2 tree).
 * The backend's launcher shell writes its own pid into `procsFiles` and then execs bwrap, so the
 * whole box tree is inside before any of it runs.
 */

export const CGROUP_PREFIX = CGROUP_NAMES.bwrap;
/** Names other backends give their cgroups under the same prefix: never this backend's, whatever their shape. */
export const SIBLING_PREFIXES = BWRAP_SIBLING_PREFIXES;
export type LimitName = 'memory' | 'pids' | 'cpu';
export const LIMIT_NAMES: readonly LimitName[] = ['memory', 'pids', 'cpu'];

const V1_CONTROLLERS = ['memory', 'pids', 'cpu', 'cpuacct', 'freezer'] as const;
type V1Controller = (typeof V1_CONTROLLERS)[number];

const CFS_PERIOD_US = 100_000;
const KILL_WAIT_MS = 5_000;

export interface CgroupLimits {
  memoryBytes?: number;
  pids?: number;
  cpuCores?: number;
}

export interface EnvCgroup {
  readonly name: string;
  /** Files the launcher writes its pid into (one per v1 hierarchy, one for v2). */
  readonly procsFiles: readonly string[];
  /** Whether oom kills are observable (a memory controller is attached). */
  readonly watchesOom: boolean;
  pids(): Promise<number[]>;
  /** Freeze, SIGKILL every member, thaw, wait until empty. Returns the pids still inside afterwards. */
  killAll(): Promise<number[]>;
  /** Resets what the kernel lets us reset before an exec and returns the baseline of the rest. */
  beginExec(): Promise<CgroupCounters>;
  /** Counters for one exec: peaks as they are, event counts minus the baseline. */
  report(baseline: CgroupCounters): Promise<ResourceReport>;
  /** Removes the directories; returns a problem per directory that could not be removed. */
  remove(): Promise<string[]>;
}

export interface CgroupHierarchy {
  readonly version: 1 | 2;
  /** Limits that cannot be applied here, with the reason. */
  readonly unavailable: Partial<Record<LimitName, string>>;
  /** Whether the whole box can be killed through the hierarchy (freezer or cgroup.kill). */
  readonly canKill: boolean;
  describe(): string;
  create(name: string, limits: CgroupLimits): Promise<EnvCgroup>;
  /** Directories named sandcheck-* in this hierarchy, by name. */
  list(): Promise<Map<string, string[]>>;
  /** A cgroup of this hierarchy by name, for sweeping (no limits touched). */
  open(name: string): EnvCgroup;
}

// ---------------------------------------------------------------- small file helpers

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

function code(err: unknown): string {
  return typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : String(err);
}

function tryRmdir(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // already gone, or busy: nothing more to undo here
  }
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, stepMs = 10): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > until) return false;
    await sleep(stepMs);
  }
}

const sub = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined ? undefined : a - (b ?? 0));

// ---------------------------------------------------------------- v1

class V1Cgroup implements EnvCgroup {
  readonly procsFiles: readonly string[];
  readonly watchesOom: boolean;
  constructor(
    readonly name: string,
    /** controller → its directory (co-mounted controllers share one). */
    private readonly dirs: ReadonlyMap<V1Controller, string>,
  ) {
    this.procsFiles = [...new Set(dirs.values())].map((d) => join(d, 'cgroup.procs'));
    this.watchesOom = dirs.has('memory');
  }

  private dir(c: V1Controller): string | undefined {
    return this.dirs.get(c);
  }

  private file(c: V1Controller, f: string): string | undefined {
    const d = this.dir(c);
    return d === undefined ? undefined : join(d, f);
  }

  async pids(): Promise<number[]> {
    const all = new Set<number>();
    for (const f of this.procsFiles) for (const p of await readPids(f)) all.add(p);
    return [...all].sort((a, b) => a - b);
  }

  async killAll(): Promise<number[]> {
    const freezer = this.file('freezer', 'freezer.state');
    for (let round = 0; round < 5; round++) {
      const before = await this.pids();
      if (before.length === 0) return [];
      let frozen = false;
      if (freezer) {
        try {
          writeControl(freezer, 'FROZEN');
          frozen = await waitFor(async () => (await readText(freezer))?.trim() === 'FROZEN', 1000);
        } catch {
          frozen = false;
        }
      }
      // Frozen tasks cannot fork or exit, so this list is complete and no pid can be reused under us.
      for (const pid of await this.pids()) killQuietly(pid);
      if (freezer) tryWriteControl(freezer, 'THAWED');
      if (await waitFor(async () => (await this.pids()).length === 0, frozen ? KILL_WAIT_MS : 200)) return [];
    }
    return this.pids();
  }

  async beginExec(): Promise<CgroupCounters> {
    // max_usage, failcnt and cpuacct.usage can be reset; oom_kill, pids.events and nr_throttled cannot.
    for (const [c, f] of [
      ['memory', 'memory.max_usage_in_bytes'],
      ['memory', 'memory.failcnt'],
      ['cpuacct', 'cpuacct.usage'],
    ] as const) {
      const path = this.file(c, f);
      if (path) tryWriteControl(path, '0');
    }
    return this.counters();
  }

  private async counters(): Promise<CgroupCounters> {
    const c = await readV1Counters(this.dirs);
    // With a pids controller, no refused fork yet is 0, not unknown.
    if (this.dir('pids')) c.pidsMaxEvents ??= 0;
    return c;
  }

  async report(baseline: CgroupCounters): Promise<ResourceReport> {
    const now = await this.counters();
    return observedOnly({
      source: `cgroup v1 ${[...this.dirs.keys()].join(',')}: ${this.name}`,
      memoryLimitBytes: now.memoryLimitBytes,
      memoryPeakBytes: now.memoryPeakBytes,
      memoryFailcnt: now.memoryFailcnt,
      oomKills: sub(now.oomKills, baseline.oomKills),
      pidsLimit: now.pidsLimit,
      pidsPeak: now.pidsPeak,
      pidsMaxEvents: sub(now.pidsMaxEvents, baseline.pidsMaxEvents),
      cpuQuotaCores: now.cpuQuotaCores,
      cpuUsageNs: now.cpuUsageNs,
      cpuThrottledPeriods: sub(now.cpuThrottledPeriods, baseline.cpuThrottledPeriods),
    });
  }

  async remove(): Promise<string[]> {
    const problems: string[] = [];
    for (const [c, d] of uniqueDirs(this.dirs)) {
      try {
        rmdirSync(d);
      } catch (err) {
        if (code(err) !== 'ENOENT') problems.push(`cgroup ${this.name} (${c}) could not be removed: ${code(err)}`);
      }
    }
    return problems;
  }
}

function uniqueDirs(dirs: ReadonlyMap<V1Controller, string>): [string, string][] {
  const byDir = new Map<string, string[]>();
  for (const [c, d] of dirs) byDir.set(d, [...(byDir.get(d) ?? []), c]);
  return [...byDir].map(([d, cs]) => [cs.join(','), d]);
}

class V1Hierarchy implements CgroupHierarchy {
  readonly version = 1 as const;
  readonly canKill: boolean;
  constructor(
    /** controller → hierarchy root (mount point). */
    private readonly roots: ReadonlyMap<V1Controller, string>,
    readonly unavailable: Partial<Record<LimitName, string>>,
  ) {
    this.canKill = roots.has('freezer');
  }

  describe(): string {
    return `cgroup v1 (${[...this.roots.keys()].join(',')})`;
  }

  open(name: string): V1Cgroup {
    return new V1Cgroup(name, new Map([...this.roots].map(([c, r]) => [c, join(r, name)])));
  }

  async create(name: string, limits: CgroupLimits): Promise<EnvCgroup> {
    const cg = this.open(name);
    const made: string[] = [];
    const dirs = new Map([...this.roots].map(([c, r]) => [c, join(r, name)]));
    try {
      for (const [, d] of uniqueDirs(dirs)) {
        mkdirSync(d);
        made.push(d);
      }
      const memDir = dirs.get('memory');
      if (limits.memoryBytes !== undefined && memDir) {
        writeControl(join(memDir, 'memory.limit_in_bytes'), String(limits.memoryBytes));
        // memsw (memory + swap) must be >= the memory limit, so it comes second; absent without swap accounting.
        const memsw = join(memDir, 'memory.memsw.limit_in_bytes');
        if (existsSync(memsw)) writeControl(memsw, String(limits.memoryBytes));
      }
      const pidsDir = dirs.get('pids');
      if (limits.pids !== undefined && pidsDir) writeControl(join(pidsDir, 'pids.max'), String(limits.pids));
      const cpuDir = dirs.get('cpu');
      if (limits.cpuCores !== undefined && cpuDir) {
        writeControl(join(cpuDir, 'cpu.cfs_period_us'), String(CFS_PERIOD_US));
        writeControl(join(cpuDir, 'cpu.cfs_quota_us'), String(Math.max(1000, Math.round(limits.cpuCores * CFS_PERIOD_US))));
      }
    } catch (err) {
      for (const d of made.reverse()) tryRmdir(d);
      throw new Error(`cannot set up cgroup ${name}: ${code(err)}`, { cause: err });
    }
    return cg;
  }

  async list(): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    for (const root of new Set(this.roots.values())) {
      for (const e of await readdir(root).catch(() => [] as string[])) {
        if (e.startsWith(CGROUP_PREFIX)) out.set(e, [...(out.get(e) ?? []), join(root, e)]);
      }
    }
    return out;
  }
}

// ---------------------------------------------------------------- v2

class V2Cgroup implements EnvCgroup {
  readonly procsFiles: readonly string[];
  readonly watchesOom: boolean;
  readonly dir: string;
  constructor(
    readonly name: string,
    parent: string,
    private readonly controllers: ReadonlySet<string>,
  ) {
    this.dir = join(parent, name);
    this.procsFiles = [join(this.dir, 'cgroup.procs')];
    this.watchesOom = controllers.has('memory');
  }

  pids(): Promise<number[]> {
    return readPids(join(this.dir, 'cgroup.procs'));
  }

  private populated = async (): Promise<boolean> => parseKeyed(await readText(join(this.dir, 'cgroup.events'))).get('populated') === 1;

  async killAll(): Promise<number[]> {
    if ((await this.pids()).length === 0) return [];
    const killFile = join(this.dir, 'cgroup.kill');
    if (await exists(killFile)) {
      tryWriteControl(killFile, '1');
    } else {
      const freeze = join(this.dir, 'cgroup.freeze');
      tryWriteControl(freeze, '1');
      await waitFor(async () => parseKeyed(await readText(join(this.dir, 'cgroup.events'))).get('frozen') === 1, 1000);
      for (const pid of await this.pids()) killQuietly(pid);
      tryWriteControl(freeze, '0');
    }
    await waitFor(async () => !(await this.populated()), KILL_WAIT_MS);
    return this.pids();
  }

  async beginExec(): Promise<CgroupCounters> {
    // memory.peak resets only per open file descriptor on v2; peaks are per environment.
    return this.counters();
  }

  private async counters(): Promise<CgroupCounters> {
    const c = await readV2Counters(this.dir, this.controllers);
    if (this.controllers.has('pids')) c.pidsMaxEvents ??= 0;
    return c;
  }

  async report(baseline: CgroupCounters): Promise<ResourceReport> {
    const now = await this.counters();
    return observedOnly({
      source: `cgroup v2 ${[...this.controllers].join(',') || '(no controllers)'}: ${this.name}`,
      memoryLimitBytes: now.memoryLimitBytes,
      memoryPeakBytes: now.memoryPeakBytes,
      memoryFailcnt: sub(now.memoryFailcnt, baseline.memoryFailcnt),
      oomKills: sub(now.oomKills, baseline.oomKills),
      pidsLimit: now.pidsLimit,
      pidsPeak: now.pidsPeak,
      pidsMaxEvents: sub(now.pidsMaxEvents, baseline.pidsMaxEvents),
      cpuQuotaCores: now.cpuQuotaCores,
      cpuUsageNs: sub(now.cpuUsageNs, baseline.cpuUsageNs),
      cpuThrottledPeriods: sub(now.cpuThrottledPeriods, baseline.cpuThrottledPeriods),
    });
  }

  async remove(): Promise<string[]> {
    try {
      rmdirSync(this.dir);
      return [];
    } catch (err) {
      return code(err) === 'ENOENT' ? [] : [`cgroup ${this.name} could not be removed: ${code(err)}`];
    }
  }
}

class V2Hierarchy implements CgroupHierarchy {
  readonly version = 2 as const;
  readonly canKill = true;
  constructor(
    private readonly parent: string,
    /** Controllers enabled for children of `parent`. */
    private readonly controllers: ReadonlySet<string>,
    readonly unavailable: Partial<Record<LimitName, string>>,
  ) {}

  describe(): string {
    return `cgroup v2 (${[...this.controllers].join(',') || 'no controllers'})`;
  }

  open(name: string): V2Cgroup {
    return new V2Cgroup(name, this.parent, this.controllers);
  }

  async create(name: string, limits: CgroupLimits): Promise<EnvCgroup> {
    const cg = this.open(name);
    mkdirSync(cg.dir);
    try {
      if (limits.memoryBytes !== undefined) {
        writeControl(join(cg.dir, 'memory.max'), String(limits.memoryBytes));
        const swap = join(cg.dir, 'memory.swap.max');
        if (existsSync(swap)) writeControl(swap, '0');
      }
      if (limits.pids !== undefined) writeControl(join(cg.dir, 'pids.max'), String(limits.pids));
      if (limits.cpuCores !== undefined) {
        writeControl(join(cg.dir, 'cpu.max'), `${Math.max(1000, Math.round(limits.cpuCores * CFS_PERIOD_US))} ${CFS_PERIOD_US}`);
      }
    } catch (err) {
      tryRmdir(cg.dir);
      throw new Error(`cannot set up cgroup ${name}: ${code(err)}`, { cause: err });
    }
    return cg;
  }

  async list(): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    for (const e of await readdir(this.parent).catch(() => [] as string[])) {
      if (e.startsWith(CGROUP_PREFIX)) out.set(e, [join(this.parent, e)]);
    }
    return out;
  }
}

// ---------------------------------------------------------------- detection

export type CgroupMode = 'auto' | 'v1' | 'v2' | 'off';

export type CgroupDetection = { hierarchy: CgroupHierarchy } | { hierarchy: undefined; reason: string };

/** Tries a throwaway sandcheck-probe-* directory: the only sure test that this process may create cgroups. */
async function canCreateIn(root: string): Promise<string | undefined> {
  const dir = join(root, `${CGROUP_PREFIX}probe-${process.pid}-${randomBytes(3).toString('hex')}`);
  try {
    await access(root, constants.W_OK);
    await mkdir(dir);
  } catch (err) {
    return `cannot create cgroups in ${root}: ${code(err)}`;
  }
  await rmdir(dir).catch(() => undefined);
  return undefined;
}

async function detectV1(mounts: CgroupMount[]): Promise<CgroupDetection> {
  const roots = new Map<V1Controller, string>();
  for (const m of mounts) {
    if (m.fstype !== 'cgroup') continue;
    for (const c of V1_CONTROLLERS) if (m.options.includes(c) && !roots.has(c)) roots.set(c, m.path);
  }
  if (roots.size === 0) return { hierarchy: undefined, reason: 'no cgroup v1 controller is mounted' };
  // Co-mounted controllers (cpu,cpuacct) share one directory tree.
  for (const [c, r] of roots) roots.set(c, await realpath(r).catch(() => r));
  for (const root of new Set(roots.values())) {
    const problem = await canCreateIn(root);
    if (problem) return { hierarchy: undefined, reason: problem };
  }
  const unavailable: Partial<Record<LimitName, string>> = {};
  for (const l of LIMIT_NAMES) if (!roots.has(l)) unavailable[l] = `the cgroup v1 ${l} controller is not mounted`;
  return { hierarchy: new V1Hierarchy(roots, unavailable) };
}

async function detectV2(mounts: CgroupMount[], parent: string | undefined, enable: boolean): Promise<CgroupDetection> {
  const v2 = mounts.filter((m) => m.fstype === 'cgroup2');
  const dir = parent ?? v2.find((m) => m.path === '/sys/fs/cgroup')?.path ?? v2[0]?.path;
  if (dir === undefined) return { hierarchy: undefined, reason: 'no cgroup2 filesystem is mounted' };
  if (!(await exists(join(dir, 'cgroup.controllers')))) return { hierarchy: undefined, reason: `${dir} is not a cgroup2 directory` };
  const problem = await canCreateIn(dir);
  if (problem) return { hierarchy: undefined, reason: problem };
  const words = async (f: string): Promise<Set<string>> => new Set(((await readText(join(dir, f))) ?? '').trim().split(/\s+/).filter(Boolean));
  const available = await words('cgroup.controllers');
  let enabled = await words('cgroup.subtree_control');
  const unavailable: Partial<Record<LimitName, string>> = {};
  for (const c of LIMIT_NAMES) {
    if (enabled.has(c)) continue;
    if (!available.has(c)) {
      unavailable[c] = `the cgroup2 ${c} controller is not available in ${dir} (cgroup.controllers: ${[...available].join(' ') || 'none'})`;
      continue;
    }
    if (!enable) {
      unavailable[c] = `the cgroup2 ${c} controller is not enabled in ${dir}/cgroup.subtree_control`;
      continue;
    }
    try {
      // Only the root cgroup may hold processes and enable controllers for its children at once.
      await writeFile(join(dir, 'cgroup.subtree_control'), `+${c}`);
    } catch (err) {
      unavailable[c] =
        `cannot enable the cgroup2 ${c} controller in ${dir}: ${code(err)}${code(err) === 'EBUSY' ? ' (the cgroup holds processes; give sandcheck a delegated subtree)' : ''}`;
    }
  }
  enabled = await words('cgroup.subtree_control');
  return { hierarchy: new V2Hierarchy(dir, new Set(LIMIT_NAMES.filter((c) => enabled.has(c))), unavailable) };
}

/**
 * Finds the hierarchy to use. On cgroup v2 it enables the memory, pids and cpu controllers for the
 * parent's children when they are available but off (what every container runtime does), unless
 * `enableControllers` is false.
 */
export async function detectCgroups(mode: CgroupMode, v2Parent?: string, enableControllers = true): Promise<CgroupDetection> {
  if (mode === 'off') return { hierarchy: undefined, reason: 'cgroups are turned off in the backend options' };
  if (process.platform !== 'linux') return { hierarchy: undefined, reason: `cgroups need Linux (this is ${process.platform})` };
  const mounts = await cgroupMounts();
  if (mode === 'v1') return detectV1(mounts);
  if (mode === 'v2') return detectV2(mounts, v2Parent, enableControllers);
  const hasV1 = mounts.some((m) => m.fstype === 'cgroup' && LIMIT_NAMES.some((c) => m.options.includes(c)));
  if (hasV1) return detectV1(mounts);
  return detectV2(mounts, v2Parent, enableControllers);
}

export const cgroupNameFor = (key: string): string => `${CGROUP_PREFIX}${key}`;
