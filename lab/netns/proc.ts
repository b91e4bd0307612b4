import { readdir, readFile, readlink } from 'node:fs/promises';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** A pid plus its start time (clock ticks since boot), so a reused pid is never mistaken for the original. */
export interface ProcIdentity {
  readonly pid: number;
  readonly startTime: number;
}

interface ProcStat {
  state: string;
  startTime: number;
}

function parseStat(text: string): ProcStat | undefined {
  // comm (field 2) may hold spaces and parentheses; the fields after the last ')' are fixed.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const state = rest[0];
  const startTime = Number(rest[19]);
  if (state === undefined || !Number.isSafeInteger(startTime)) return undefined;
  return { state, startTime };
}

async function readStat(pid: number): Promise<ProcStat | undefined> {
  return readStatSync(pid);
}

function readStatSync(pid: number): ProcStat | undefined {
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

export async function identify(pid: number): Promise<ProcIdentity | undefined> {
  const stat = await readStat(pid);
  return stat === undefined ? undefined : { pid, startTime: stat.startTime };
}

/** Alive = exists, is not a zombie, and started when we recorded it did. */
export async function isAlive(proc: ProcIdentity): Promise<boolean> {
  return matches(proc, await readStat(proc.pid));
}

export function isAliveSync(proc: ProcIdentity): boolean {
  return matches(proc, readStatSync(proc.pid));
}

function matches(proc: ProcIdentity, stat: ProcStat | undefined): boolean {
  return stat !== undefined && stat.state !== 'Z' && stat.state !== 'X' && stat.startTime === proc.startTime;
}

export async function readBootId(): Promise<string> {
  return (await readFile('/proc/sys/kernel/random/boot_id', 'utf8')).trim();
}

/** Every process whose network namespace is the one with inode `inode`. */
export async function processesInNetns(inode: number): Promise<ProcIdentity[]> {
  const want = `net:[${inode}]`;
  const found: ProcIdentity[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      if ((await readlink(`/proc/${pid}/ns/net`)) !== want) continue;
    } catch {
      continue;
    }
    const id = await identify(pid);
    if (id !== undefined) found.push(id);
  }
  return found;
}

function signal(proc: ProcIdentity, sig: NodeJS.Signals): void {
  try {
    process.kill(proc.pid, sig);
  } catch {
    // Already gone.
  }
}

async function aliveOf(procs: readonly ProcIdentity[]): Promise<ProcIdentity[]> {
  const flags = await Promise.all(procs.map(isAlive));
  return procs.filter((_, i) => flags[i]);
}

async function waitGone(procs: readonly ProcIdentity[], timeoutMs: number): Promise<ProcIdentity[]> {
  const deadline = Date.now() + timeoutMs;
  let left = await aliveOf(procs);
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(20);
    left = await aliveOf(left);
  }
  return left;
}

export interface TerminateResult {
  /** Processes that were still alive when asked to stop. */
  signalled: number;
  /** Of those, how many needed SIGKILL after the grace period. */
  killed: number;
  /** Still alive after SIGKILL (should be 0; uninterruptible sleep can cause it). */
  survivors: ProcIdentity[];
}

/** SIGTERM, wait `graceMs`, then SIGKILL whatever is left; each signal re-checks the start time first. */
export async function terminate(procs: readonly ProcIdentity[], graceMs = 1000): Promise<TerminateResult> {
  const alive = await aliveOf(procs);
  for (const proc of alive) signal(proc, 'SIGTERM');
  const stubborn = await waitGone(alive, graceMs);
  for (const proc of await aliveOf(stubborn)) signal(proc, 'SIGKILL');
  const survivors = await waitGone(stubborn, 2000);
  return { signalled: alive.length, killed: stubborn.length, survivors };
}

/** Synchronous SIGKILL of everything in a network namespace, for exit hooks where nothing async runs. */
export function killNetnsSync(inode: number): void {
  const want = `net:[${inode}]`;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readlinkSync(`/proc/${entry}/ns/net`) === want) process.kill(Number(entry), 'SIGKILL');
    } catch {
      // Gone, or not ours to read.
    }
  }
}
