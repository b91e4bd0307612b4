import { procPids, procText } from '../../core/proc-files.js';
import { childrenOf } from '../../lab/user-space-kernel.js';

/** Facts about host processes, read from the host's /proc (from outside any box). */

export interface ProcStat {
  pid: number;
  comm: string;
  ppid: number;
  /** Clock ticks since boot (field 22): together with the pid it names one process for good. */
  startTime: number;
}

export function parseStat(text: string): ProcStat | undefined {
  // comm may hold spaces and parentheses: it runs from the first '(' to the last ')'.
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  const pid = Number(text.slice(0, open).trim());
  const rest = text.slice(close + 2).split(' ');
  // rest[0] is field 3 (state), so field N is rest[N - 3].
  const ppid = Number(rest[1]);
  const startTime = Number(rest[19]);
  if (!Number.isInteger(pid) || !Number.isInteger(ppid) || !Number.isFinite(startTime)) return undefined;
  return { pid, comm: text.slice(open + 1, close), ppid, startTime };
}

function statOf(pid: number): ProcStat | undefined {
  const text = procText(`/proc/${pid}/stat`);
  return text === undefined ? undefined : parseStat(text);
}

export async function readStat(pid: number): Promise<ProcStat | undefined> {
  return statOf(pid);
}

export async function allStats(): Promise<ProcStat[]> {
  return procPids().flatMap((pid) => statOf(pid) ?? []);
}

/** `root` and every process below it, by walking parent links in one snapshot of /proc ([] when root is gone). */
export async function processTree(root: number): Promise<number[]> {
  const stats = await allStats();
  if (!stats.some((s) => s.pid === root)) return [];
  const children = new Map<number, number[]>();
  for (const s of stats) {
    const list = children.get(s.ppid) ?? [];
    list.push(s.pid);
    children.set(s.ppid, list);
  }
  const out: number[] = [];
  const queue = [root];
  const seen = new Set<number>();
  while (queue.length > 0) {
    const pid = queue.shift();
    if (pid === undefined || seen.has(pid)) continue;
    seen.add(pid);
    out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

/**
 * The given processes and all their descendants, by each thread's children list (no whole-/proc scan), at most
 * `max`: a runtime may move its own processes out of the cgroup they were started in, never out of their parentage.
 */
export function withDescendants(roots: readonly number[], max = 4096): number[] {
  const seen = new Set<number>();
  const queue = [...roots];
  while (queue.length > 0 && seen.size < max) {
    const pid = queue.shift();
    if (pid === undefined || seen.has(pid)) continue;
    seen.add(pid);
    queue.push(...childrenOf(pid));
  }
  return [...seen];
}

/** True when the process `pid` exists and is the same one that was recorded (start time matches). */
export async function sameProcessAlive(pid: number, startTime: number | undefined): Promise<boolean> {
  const s = await readStat(pid);
  return s !== undefined && s.startTime === startTime;
}

/** The short command name of a process, never its arguments (they may hold host paths). */
export async function commOf(pid: number): Promise<string> {
  return procText(`/proc/${pid}/comm`)?.trim() ?? '?';
}

export async function bootId(): Promise<string> {
  return procText('/proc/sys/kernel/random/boot_id')?.trim() ?? 'unknown';
}
