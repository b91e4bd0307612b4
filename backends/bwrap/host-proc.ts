import { readdir, readFile } from 'node:fs/promises';

/** Helpers that read the host's /proc from outside the box. */

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

export async function readStat(pid: number): Promise<ProcStat | undefined> {
  try {
    return parseStat(await readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

export async function allStats(): Promise<ProcStat[]> {
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return [];
  }
  const out: ProcStat[] = [];
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    const s = await readStat(Number(e));
    if (s) out.push(s);
  }
  return out;
}

/** `root` and every process below it, by walking parent links in one snapshot of /proc. */
export async function processTree(root: number): Promise<number[]> {
  const stats = await allStats();
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
    if (pid === root && !stats.some((s) => s.pid === root)) continue;
    out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

export interface ProcIdentity {
  pid: number;
  name: string;
  /** real, effective, saved, filesystem */
  uids: number[];
  gids: number[];
  capEff: bigint;
  noNewPrivs: boolean | undefined;
}

export function parseStatus(pid: number, text: string): ProcIdentity | undefined {
  const field = (name: string): string | undefined => new RegExp(`^${name}:[ \\t]*(.*)$`, 'm').exec(text)?.[1]?.trim();
  const uid = field('Uid');
  const gid = field('Gid');
  const cap = field('CapEff');
  if (uid === undefined || gid === undefined || cap === undefined) return undefined;
  const nnp = field('NoNewPrivs');
  return {
    pid,
    name: field('Name') ?? '?',
    uids: uid.split(/\s+/).map(Number),
    gids: gid.split(/\s+/).map(Number),
    capEff: BigInt(`0x${cap}`),
    noNewPrivs: nnp === undefined ? undefined : nnp === '1',
  };
}

export async function readIdentity(pid: number): Promise<ProcIdentity | undefined> {
  try {
    return parseStatus(pid, await readFile(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** The short command name of a process, never its arguments (they may hold host paths). */
export async function commOf(pid: number): Promise<string> {
  try {
    return (await readFile(`/proc/${pid}/comm`, 'utf8')).trim();
  } catch {
    return '?';
  }
}

export function killQuietly(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

/** True when the process `pid` exists and is the same one that was recorded (start time matches). */
export async function sameProcessAlive(pid: number, startTime: number): Promise<boolean> {
  const s = await readStat(pid);
  return s !== undefined && s.startTime === startTime;
}

export async function bootId(): Promise<string> {
  try {
    return (await readFile('/proc/sys/kernel/random/boot_id', 'utf8')).trim();
  } catch {
    return 'unknown';
  }
}

const O_CLOEXEC = 0o2000000;

/**
 * This process's own descriptors above stderr that a child would inherit (no O_CLOEXEC): whatever the
 * harness's parent left open. bwrap passes every inherited descriptor into the box, so the launcher gets
 * /dev/null in their place.
 */
export async function inheritableFds(): Promise<number[]> {
  let entries: string[];
  try {
    entries = await readdir('/proc/self/fd');
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const e of entries) {
    const fd = Number(e);
    if (!Number.isInteger(fd) || fd < 3) continue;
    try {
      const flags = /^flags:\s*([0-7]+)$/m.exec(await readFile(`/proc/self/fdinfo/${fd}`, 'utf8'))?.[1];
      if (flags !== undefined && (parseInt(flags, 8) & O_CLOEXEC) === 0) out.push(fd);
    } catch {
      // Closed meanwhile (the directory listing's own descriptor, for one).
    }
  }
  return out.sort((a, b) => a - b);
}
