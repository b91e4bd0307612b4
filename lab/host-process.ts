import { statSync } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { procBytes, procLink, procText } from '../core/proc-files.js';
import type { NamespaceName } from '../model/policy.js';

/** Identity of one host process as the kernel reports it in /proc/<pid>/status. */
export interface ProcessIdentity {
  pid: number;
  command: string;
  realUid: number;
  effectiveUid: number;
  capEff: string;
  noNewPrivs: number | null;
  seccomp: number | null;
  /** VmHWM: the process's peak resident memory. */
  peakRssBytes: number | null;
  /** The process is in the host's user namespace: only then are its capabilities host capabilities. */
  hostUserNamespace: boolean;
  /** The file it runs, as the host stats it through /proc/<pid>/exe (any mount namespace): mode bits and owner. */
  executable?: { mode: number; uid: number };
}

/** One line of /proc/<pid>/mountinfo, resolved against the host's (the harness's own) mount table. */
export interface MountEntry {
  mountPoint: string;
  /** Path inside the mounted filesystem. */
  root: string;
  /** st_dev of the filesystem instance, major:minor. */
  device: string;
  fsType: string;
  source: string;
  readOnly: boolean;
  /** Mounted nodev: device nodes on it cannot be opened. */
  noDevices: boolean;
  /** Where the same filesystem instance shows this path on the host; absent = an instance of the box's own. */
  hostPath?: string;
  /** The host's lstat of hostPath says it is a Unix socket. */
  hostSocket?: boolean;
}

/** A block device node found in the box's /dev, read through /proc/<pid>/root. */
export interface DeviceNode {
  path: string;
  device: string;
  /** The host has this block device (/sys/dev/block/<major:minor>). */
  hostBlockDevice: boolean;
  /** The mount holding the node allows devices (not nodev). */
  usable: boolean;
}

/** The mount a box path lies on: the last mount whose mount point is the longest prefix of it. */
export function mountOf(path: string, mounts: readonly MountEntry[]): MountEntry | undefined {
  let best: MountEntry | undefined;
  for (const m of mounts) {
    if (!under(path, m.mountPoint)) continue;
    if (!best || m.mountPoint.length >= best.mountPoint.length) best = m;
  }
  return best;
}

/** What the host reads about one process of the box beyond its identity (DESIGN principle 2: posture read from the host). */
export interface ProcessPosture {
  pid: number;
  /** The start of /proc/<pid>/cmdline (NULs as spaces): ties the process to this execution (its argv carries the nonce). */
  cmdline: string;
  /** Per namespace: true = the process shares the harness's own (host) namespace; absent = unreadable. */
  sharedNamespaces: Partial<Record<NamespaceName, boolean>>;
  capBnd: string;
  capAmb: string;
  mounts: MountEntry[];
  mountsTruncated: boolean;
  /** v1 devices.list of the process's device cgroup; undefined = not readable (no v1 devices controller). */
  deviceCgroup?: { path: string; rules: string[] };
  /** Block device nodes in the box's /dev and how many /dev entries the host could see at all. */
  devNodes: DeviceNode[];
  devEntriesSeen: number;
  /**
   * Only where every mount is a read-only instance of the process's own (no host path: a user-space kernel's empty
   * root): the host's walk of that whole tree through /proc/<pid>/root, complete when it ended within its bound.
   */
  ownRoot?: { entries: number; blockNodes: number; complete: boolean };
}

export const NAMESPACES: readonly NamespaceName[] = ['mnt', 'pid', 'net', 'ipc', 'uts', 'user', 'cgroup'];
const MAX_MOUNTS = 512;
const MAX_DEV_ENTRIES = 512;

function field(status: string, name: string): string | undefined {
  return new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(status)?.[1]?.trim();
}

function kib(value: string | undefined): number | null {
  const n = /^(\d+)\s*kB$/.exec(value ?? '')?.[1];
  return n === undefined ? null : Number(n) * 1024;
}

export async function readProcessIdentity(pid: number): Promise<ProcessIdentity | undefined> {
  const status = procText(`/proc/${pid}/status`);
  const userNs = procLink(`/proc/${pid}/ns/user`);
  if (status === undefined || userNs === undefined) return undefined;
  const uids = (field(status, 'Uid') ?? '').split(/\s+/).map(Number);
  const num = (name: string): number | null => {
    const v = field(status, name);
    return v === undefined ? null : Number(v);
  };
  return {
    pid,
    command: field(status, 'Name') ?? '?',
    realUid: uids[0] ?? -1,
    effectiveUid: uids[1] ?? -1,
    capEff: field(status, 'CapEff') ?? 'unknown',
    noNewPrivs: num('NoNewPrivs'),
    seccomp: num('Seccomp'),
    peakRssBytes: kib(field(status, 'VmHWM')),
    hostUserNamespace: userNs === (procLink('/proc/self/ns/user') ?? ''),
    ...executableOf(pid),
  };
}

function executableOf(pid: number): { executable?: { mode: number; uid: number } } {
  try {
    const st = statSync(`/proc/${pid}/exe`);
    return { executable: { mode: st.mode & 0o7777, uid: st.uid } };
  } catch {
    // Gone, or a kernel thread: nothing to say.
    return {};
  }
}

/** True when the process holds any capability over the host (capabilities inside a child user namespace do not count). */
export function hasCapabilities(id: ProcessIdentity): boolean {
  return id.hostUserNamespace && /^[0-9a-f]+$/i.test(id.capEff) && BigInt(`0x${id.capEff}`) !== 0n;
}

/** mountinfo escapes space, tab, newline and backslash as octal. */
const unescape = (s: string): string => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** Parses /proc/<pid>/mountinfo (proc(5)); malformed lines are skipped. */
export function parseMountinfo(text: string): Omit<MountEntry, 'hostPath' | 'hostSocket'>[] {
  const out: Omit<MountEntry, 'hostPath' | 'hostSocket'>[] = [];
  for (const line of text.split('\n')) {
    const [head, tail] = line.split(' - ');
    if (!head || !tail) continue;
    const f = head.split(' ');
    const t = tail.split(' ');
    const [device, root, mountPoint, options] = [f[2], f[3], f[4], f[5]];
    if (!device || !root || !mountPoint || !options || !t[0]) continue;
    const superOptions = (t[2] ?? '').split(',');
    out.push({
      mountPoint: unescape(mountPoint),
      root: unescape(root),
      device,
      fsType: t[0],
      source: unescape(t[1] ?? ''),
      readOnly: options.split(',').includes('ro') || superOptions.includes('ro'),
      noDevices: options.split(',').includes('nodev'),
    });
  }
  return out;
}

const under = (path: string, prefix: string): boolean => prefix === '/' || path === prefix || path.startsWith(`${prefix}/`);

/**
 * Where a box mount's filesystem instance shows the same path on the host: a host mount of the same
 * device whose root is a prefix of the box mount's root (the longest). A device the host never mounted
 * is an instance of the box's own (a fresh tmpfs, its proc): no host path.
 */
export function hostPathOf(m: { device: string; root: string }, host: readonly Omit<MountEntry, 'hostPath' | 'hostSocket'>[]): string | undefined {
  let best: { root: string; mountPoint: string } | undefined;
  let sameDevice = false;
  for (const h of host) {
    if (h.device !== m.device) continue;
    sameDevice = true;
    if (under(m.root, h.root) && (!best || h.root.length > best.root.length)) best = h;
  }
  if (!best) return sameDevice ? `(host filesystem ${m.device}):${m.root}` : undefined;
  const rest = best.root === '/' ? m.root : m.root.slice(best.root.length);
  return best.mountPoint === '/' ? rest || '/' : `${best.mountPoint}${rest === '/' ? '' : rest}`;
}

/** The host's own view, read once per sampler: the harness's namespaces and mount table. */
export interface HostView {
  namespaces: Partial<Record<NamespaceName, string>>;
  mounts: Omit<MountEntry, 'hostPath' | 'hostSocket'>[];
}

export async function readHostView(): Promise<HostView> {
  const namespaces: Partial<Record<NamespaceName, string>> = {};
  for (const ns of NAMESPACES) {
    const link = procLink(`/proc/self/ns/${ns}`);
    if (link !== undefined) namespaces[ns] = link;
  }
  return { namespaces, mounts: parseMountinfo(procText('/proc/self/mountinfo') ?? '') };
}

async function deviceCgroup(pid: number): Promise<ProcessPosture['deviceCgroup']> {
  const lines = (procText(`/proc/${pid}/cgroup`) ?? '').split('\n');
  const path = lines.map((l) => /^\d+:([^:]*):(.*)$/.exec(l)).find((m) => m?.[1]?.split(',').includes('devices'))?.[2];
  if (path === undefined || path.split('/').includes('..')) return undefined;
  const list = procText(`/sys/fs/cgroup/devices${path === '/' ? '' : path}/devices.list`);
  return list === undefined
    ? undefined
    : {
        path,
        rules: list
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean)
          .slice(0, 128),
      };
}

/** major:minor of a device number (Linux's encoding). */
const devId = (rdev: number): string => `${Math.floor(rdev / 256) & 0xfff}:${(rdev & 0xff) | (Math.floor(rdev / 4096) & 0xfff00)}`;

const MAX_OWN_ROOT_ENTRIES = 256;

/** Walks a process's whole root (bounded) for block device nodes: for a read-only root of its own, nothing can be added. */
async function walkOwnRoot(pid: number): Promise<{ entries: number; blockNodes: number; complete: boolean }> {
  const base = `/proc/${pid}/root`;
  let entries = 0;
  let blockNodes = 0;
  let complete = true;
  const visit = async (rel: string, depth: number): Promise<void> => {
    const names = await readdir(`${base}${rel}`).catch(() => undefined);
    if (names === undefined) {
      complete = false;
      return;
    }
    for (const name of names) {
      if (entries >= MAX_OWN_ROOT_ENTRIES || depth > 8) {
        complete = false;
        return;
      }
      entries++;
      const st = await lstat(`${base}${rel}/${name}`).catch(() => undefined);
      if (!st) complete = false;
      else if (st.isBlockDevice()) blockNodes++;
      else if (st.isDirectory()) await visit(`${rel}/${name}`, depth + 1);
    }
  };
  await visit('', 0);
  return { entries, blockNodes, complete };
}

/** Block device nodes in the box's /dev (and one level below), seen through /proc/<pid>/root: the host's lstat, not the box's word. */
async function devNodes(pid: number, mounts: readonly MountEntry[]): Promise<{ nodes: DeviceNode[]; seen: number }> {
  const base = `/proc/${pid}/root/dev`;
  const nodes: DeviceNode[] = [];
  let seen = 0;
  const visit = async (rel: string, depth: number): Promise<void> => {
    const names = await readdir(`${base}${rel}`).catch(() => [] as string[]);
    for (const name of names) {
      if (seen >= MAX_DEV_ENTRIES) return;
      seen++;
      const st = await lstat(`${base}${rel}/${name}`).catch(() => undefined);
      if (!st) continue;
      if (st.isBlockDevice()) {
        const device = devId(st.rdev);
        const host = await lstat(`/sys/dev/block/${device}`).then(
          () => true,
          () => false,
        );
        const path = `/dev${rel}/${name}`;
        nodes.push({ path, device, hostBlockDevice: host, usable: !mountOf(path, mounts)?.noDevices });
      } else if (st.isDirectory() && depth < 1 && name !== 'pts' && name !== 'shm' && name !== 'mqueue') {
        await visit(`${rel}/${name}`, depth + 1);
      }
    }
  };
  await visit('', 0);
  return { nodes: nodes.slice(0, 64), seen };
}

/**
 * The posture of one process as the host sees it; undefined when it is gone or unreadable. `emptyCmdline`: a
 * process that never has arguments (a user-space kernel's address space) is read anyway.
 */
export async function readProcessPosture(pid: number, host: HostView, opts: { emptyCmdline?: boolean } = {}): Promise<ProcessPosture | undefined> {
  const status = procText(`/proc/${pid}/status`);
  const mountinfo = procText(`/proc/${pid}/mountinfo`);
  const cmdline = procBytes(`/proc/${pid}/cmdline`)?.subarray(0, 1024).toString('utf8').replaceAll('\0', ' ');
  if (status === undefined || mountinfo === undefined || cmdline === undefined) return undefined;
  // Mid-exec the process already shows its new executable but not yet its arguments (the kernel sets them up
  // after switching the memory map; a busy machine widens that window): not read yet, so the sampler tries again.
  if (cmdline.trim() === '' && opts.emptyCmdline !== true) return undefined;
  const sharedNamespaces: Partial<Record<NamespaceName, boolean>> = {};
  for (const ns of NAMESPACES) {
    const link = procLink(`/proc/${pid}/ns/${ns}`);
    const mine = host.namespaces[ns];
    if (link !== undefined && mine !== undefined) sharedNamespaces[ns] = link === mine;
  }
  const parsed = parseMountinfo(mountinfo);
  const mounts: MountEntry[] = [];
  /** Host block devices bound in anywhere (not only under /dev), by the host's lstat of the mount's source. */
  const boundDisks: DeviceNode[] = [];
  for (const m of parsed.slice(0, MAX_MOUNTS)) {
    const hostPath = hostPathOf(m, host.mounts);
    const st = hostPath?.startsWith('/') ? await lstat(hostPath).catch(() => undefined) : undefined;
    if (st?.isBlockDevice()) boundDisks.push({ path: m.mountPoint, device: devId(st.rdev), hostBlockDevice: true, usable: !m.noDevices });
    mounts.push({ ...m, ...(hostPath !== undefined ? { hostPath } : {}), ...(st?.isSocket() ? { hostSocket: true } : {}) });
  }
  const found = await devNodes(pid, mounts);
  const dev = { seen: found.seen, nodes: [...found.nodes, ...boundDisks.filter((b) => !found.nodes.some((n) => n.path === b.path))].slice(0, 64) };
  const cg = await deviceCgroup(pid);
  const ownOnly = mounts.length > 0 && parsed.length <= MAX_MOUNTS && mounts.every((m) => m.hostPath === undefined && m.readOnly);
  const ownRoot = ownOnly && dev.seen === 0 ? await walkOwnRoot(pid) : undefined;
  return {
    pid,
    cmdline,
    sharedNamespaces,
    capBnd: field(status, 'CapBnd') ?? 'unknown',
    capAmb: field(status, 'CapAmb') ?? 'unknown',
    mounts,
    mountsTruncated: parsed.length > MAX_MOUNTS,
    ...(cg ? { deviceCgroup: cg } : {}),
    devNodes: dev.nodes,
    devEntriesSeen: dev.seen,
    ...(ownRoot ? { ownRoot } : {}),
  };
}

// Kept beside the identity, by object: the observation's published schema has no field for posture
// (the judge writes what it found as evidence). A copied observation loses it: its judges say inconclusive.
const postures = new WeakMap<ProcessIdentity, ProcessPosture>();

export function attachPosture(id: ProcessIdentity, posture: ProcessPosture): void {
  postures.set(id, posture);
}

export function postureOf(id: ProcessIdentity): ProcessPosture | undefined {
  return postures.get(id);
}
