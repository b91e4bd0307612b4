import { readdir, readFile } from 'node:fs/promises';

/** Small readers of the host's /proc, from outside the box. */

export interface ProcStat {
  pid: number;
  comm: string;
  ppid: number;
  /** Clock ticks since boot (field 22): with the pid it names one process for good. */
  startTime: number;
}

export function parseStat(text: string): ProcStat | undefined {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  const pid = Number(text.slice(0, open).trim());
  const rest = text.slice(close + 2).split(' ');
  const ppid = Number(rest[1]);
  const startTime = Number(rest[19]);
  if (!Number.isInteger(pid) || !Number.isInteger(ppid) || !Number.isFinite(startTime)) return undefined;
  return { pid, comm: text.slice(open + 1, close), ppid, startTime };
}

export async function readStat(pid: number): Promise<ProcStat | undefined> {
  try {
    return parseStat(await readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

export async function allStats(): Promise<ProcStat[]> {
  const entries = await readdir('/proc').catch(() => [] as string[]);
  const out: ProcStat[] = [];
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    const s = await readStat(Number(e));
    if (s) out.push(s);
  }
  return out;
}

/** `root` and every process below it, from one snapshot of /proc. */
export async function processTree(root: number): Promise<number[]> {
  const stats = await allStats();
  if (!stats.some((s) => s.pid === root)) return [];
  const children = new Map<number, number[]>();
  for (const s of stats) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s.pid]);
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

/** The short command name, never the arguments (they may hold host paths). */
export async function commOf(pid: number): Promise<string> {
  try {
    return (await readFile(`/proc/${pid}/comm`, 'utf8')).trim();
  } catch {
    return '?';
  }
}

export async function cmdlineOf(pid: number): Promise<string[] | undefined> {
  try {
    const raw = await readFile(`/proc/${pid}/cmdline`);
    return raw.toString('utf8').split('\0').filter((a, i, all) => a !== '' || i < all.length - 1);
  } catch {
    return undefined;
  }
}

export function killQuietly(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

export async function bootId(): Promise<string> {
  try {
    return (await readFile('/proc/sys/kernel/random/boot_id', 'utf8')).trim();
  } catch {
    return 'unknown';
  }
}

/** Who owns a resource: this process, named so that a later run can tell whether it is still alive. */
export interface Owner {
  pid: number;
  startTime: number;
  bootId: string;
}

export async function selfOwner(): Promise<Owner> {
  return { pid: process.pid, startTime: (await readStat(process.pid))?.startTime ?? 0, bootId: await bootId() };
}

export const formatOwner = (o: Owner): string => `${o.pid}/${o.startTime}/${o.bootId}`;

export function parseOwner(text: string | undefined): Owner | undefined {
  const m = /^(\d+)\/(\d+)\/([0-9a-f-]+|unknown)$/.exec(text ?? '');
  if (!m) return undefined;
  return { pid: Number(m[1]), startTime: Number(m[2]), bootId: m[3] ?? '' };
}

export async function ownerAlive(o: Owner): Promise<boolean> {
  if (o.bootId !== (await bootId())) return false;
  const s = await readStat(o.pid);
  return s !== undefined && s.startTime === o.startTime;
}
