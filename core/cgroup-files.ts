import { readFileSync, writeFileSync } from 'node:fs';

/**
 * Reading and writing cgroupfs files, and the host's cgroup mounts (v1 and v2). cgroupfs (like procfs) is
 * answered from kernel memory, so these are synchronous: through the async API each small file costs four
 * thread-pool round trips, about 0.25 ms of CPU against 0.02 ms, and a box execution touches dozens.
 */

export async function readText(path: string): Promise<string | undefined> {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** Writes a control file (memory.limit_in_bytes, freezer.state…); throws what the kernel refused. */
export function writeControl(path: string, value: string): void {
  writeFileSync(path, value);
}

/** writeControl for writes whose failure changes nothing (a counter reset, a thaw). */
export function tryWriteControl(path: string, value: string): void {
  try {
    writeControl(path, value);
  } catch {
    // the cgroup is gone, or the kernel has no such file here: nothing to do
  }
}

/** A one-number file (memory.max, pids.peak, cpuacct.usage…); "max", empty or unreadable is undefined. */
export async function readNumber(path: string): Promise<number | undefined> {
  const t = (await readText(path))?.trim();
  if (t === undefined || t === '' || t === 'max') return undefined;
  const n = Number(t.split(/\s+/)[0]);
  return Number.isFinite(n) ? n : undefined;
}

/** "key value" lines (memory.oom_control, pids.events, cpu.stat, memory.events, cgroup.events). */
export function parseKeyed(text: string | undefined): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of (text ?? '').split('\n')) {
    const [k, v] = line.trim().split(/\s+/);
    if (k && v !== undefined && Number.isFinite(Number(v))) out.set(k, Number(v));
  }
  return out;
}

/** The pids in a cgroup.procs file ([] when it is gone). */
export async function readPids(procsFile: string): Promise<number[]> {
  const t = await readText(procsFile);
  if (t === undefined) return [];
  return t
    .split('\n')
    .map((l) => Number(l.trim()))
    .filter((n) => Number.isInteger(n) && n > 0);
}

export interface CgroupMount {
  fstype: 'cgroup' | 'cgroup2';
  path: string;
  options: string[];
}

const unescapeMount = (s: string): string => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

export function parseMounts(text: string): CgroupMount[] {
  const out: CgroupMount[] = [];
  for (const line of text.split('\n')) {
    const [, mountPoint, fstype, opts] = line.split(' ');
    if (mountPoint === undefined || opts === undefined) continue;
    if (fstype === 'cgroup' || fstype === 'cgroup2') out.push({ fstype, path: unescapeMount(mountPoint), options: opts.split(',') });
  }
  return out;
}

/** Every cgroup v1 hierarchy and cgroup2 tree mounted in this process's mount namespace. */
export async function cgroupMounts(): Promise<CgroupMount[]> {
  return parseMounts((await readText('/proc/self/mounts')) ?? '');
}
