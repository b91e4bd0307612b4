import { join } from 'node:path';
import { readV1Counters, readV2Counters, type CgroupCounters } from './cgroup-counters.js';
import { procText } from '../core/proc-files.js';

/** The controllers whose counters decide resource verdicts (cpuacct: CPU time on cgroup v1). */
const CONTROLLERS = ['memory', 'pids', 'cpu', 'cpuacct'] as const;

/** Where the host reads a process's cgroups: one directory per v1 controller, and its cgroup2 directory. */
export interface BoxCgroup {
  /** controller → directory (cgroup v1). */
  v1: Map<string, string>;
  /** Its cgroup2 directory, with the controllers enabled there. */
  v2?: { dir: string; controllers: Set<string> };
  /** controller → path as /proc/<pid>/cgroup names it, for the evidence line. */
  paths: Map<string, string>;
}

interface HostMount {
  fstype: 'cgroup' | 'cgroup2';
  mountPoint: string;
  controllers: string[];
}

const unescape = (s: string): string => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** cgroup mounts of the host whose root is the hierarchy's own root (a bind of a sub-cgroup would misplace every path). */
export function cgroupMountsFrom(mountinfo: string): HostMount[] {
  const out: HostMount[] = [];
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    const f = left?.split(' ');
    const r = right?.split(' ');
    const fstype = r?.[0];
    if (!f || !r || f[3] !== '/' || f[4] === undefined || (fstype !== 'cgroup' && fstype !== 'cgroup2')) continue;
    const superOpts = (r[2] ?? '').split(',');
    out.push({ fstype, mountPoint: unescape(f[4]), controllers: fstype === 'cgroup' ? CONTROLLERS.filter((c) => superOpts.includes(c)) : [] });
  }
  return out;
}

/** "N:controllers:path" lines of /proc/<pid>/cgroup: controller (or '' for cgroup2) → path. */
export function parseProcCgroup(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^\d+:([^:]*):(\/.*)$/.exec(line.trim());
    if (!m || m[2] === undefined || m[2].split('/').includes('..')) continue;
    if (m[1] === '') out.set('', m[2]);
    else for (const c of (m[1] ?? '').split(',')) out.set(c, m[2]);
  }
  return out;
}

/** Whether `inner` is `outer` or lies below it: the counters of `outer` then include `inner`'s processes. */
const contains = (outer: string, inner: string): boolean => outer === '/' || inner === outer || inner.startsWith(`${outer}/`);

/**
 * The cgroups the host reads for a box process, leaving out every controller whose cgroup also holds the harness
 * (the box in the harness's own cgroup or one above it): those counters are not the box's alone.
 */
export function boxCgroupOf(procCgroup: string, selfCgroup: string, mounts: readonly HostMount[]): BoxCgroup | undefined {
  const box = parseProcCgroup(procCgroup);
  const self = parseProcCgroup(selfCgroup);
  const shared = (c: string): boolean => {
    const mine = self.get(c);
    const theirs = box.get(c);
    return theirs === undefined || (mine !== undefined && contains(theirs, mine));
  };
  const v1 = new Map<string, string>();
  const paths = new Map<string, string>();
  for (const c of CONTROLLERS) {
    const mount = mounts.find((m) => m.fstype === 'cgroup' && m.controllers.includes(c));
    const path = box.get(c);
    if (!mount || path === undefined || shared(c)) continue;
    v1.set(c, join(mount.mountPoint, path));
    paths.set(c, path);
  }
  const v2mount = mounts.find((m) => m.fstype === 'cgroup2');
  const v2path = box.get('');
  let v2: BoxCgroup['v2'];
  if (v2mount && v2path !== undefined && !shared('')) {
    const dir = join(v2mount.mountPoint, v2path);
    const controllers = new Set((procText(join(dir, 'cgroup.controllers')) ?? '').split(/\s+/).filter((c) => c !== '' && !v1.has(c)));
    if (controllers.size > 0) {
      v2 = { dir, controllers };
      paths.set([...controllers].join(','), v2path);
    }
  }
  return v1.size === 0 && !v2 ? undefined : { v1, ...(v2 ? { v2 } : {}), paths };
}

/** The cgroups of a host process the harness itself reads, or undefined (gone, or sharing the harness's cgroups). */
export function readBoxCgroup(pid: number): BoxCgroup | undefined {
  const text = procText(`/proc/${pid}/cgroup`);
  if (text === undefined) return undefined;
  return boxCgroupOf(text, procText('/proc/self/cgroup') ?? '', cgroupMountsFrom(procText('/proc/self/mountinfo') ?? ''));
}

/** Its counters now: v1 controllers first, a cgroup2 directory for the controllers enabled there. */
export async function readBoxCounters(cg: BoxCgroup): Promise<CgroupCounters> {
  const v1 = cg.v1.size > 0 ? await readV1Counters(cg.v1) : {};
  const v2 = cg.v2 ? await readV2Counters(cg.v2.dir, cg.v2.controllers) : {};
  return { ...v2, ...v1 };
}

/** How the counters' cgroups are named in evidence. */
export function describeBoxCgroup(cg: BoxCgroup): string {
  return [...cg.paths].map(([c, p]) => `${c}:${p}`).join(' ');
}

const MONOTONIC = ['memoryPeakBytes', 'memoryFailcnt', 'oomKills', 'pidsPeak', 'pidsMaxEvents', 'cpuUsageNs', 'cpuThrottledPeriods'] as const;

/** Two reads of the same cgroups joined: every counter that only grows at its highest, limits as last read. */
export function joinCounters(a: CgroupCounters, b: CgroupCounters): CgroupCounters {
  const out: CgroupCounters = { ...a, ...b };
  for (const k of MONOTONIC) {
    const x = a[k];
    const y = b[k];
    if (x !== undefined || y !== undefined) out[k] = Math.max(x ?? 0, y ?? 0);
  }
  return out;
}

const EVENTS = ['memoryFailcnt', 'oomKills', 'pidsMaxEvents', 'cpuUsageNs', 'cpuThrottledPeriods'] as const;

/**
 * Event counters since a first read (taken while the payload held still, before its attack): what happened to this
 * execution, not to an earlier one in the same cgroups. Peaks and limits cannot be reset from outside and stay as read.
 */
export function sinceFirstRead(now: CgroupCounters, first: CgroupCounters): CgroupCounters {
  const out: CgroupCounters = { ...now };
  for (const k of EVENTS) {
    const n = now[k];
    const b = first[k];
    if (n !== undefined && b !== undefined) out[k] = Math.max(0, n - b);
  }
  return out;
}
