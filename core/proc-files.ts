import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * Synchronous reads of the host's /proc. A procfs read is answered from kernel memory in
 * microseconds; done through the async API each one costs four thread-pool round trips, and
 * under load a full scan queued behind other samplers took longer than the thing it watched.
 * Every helper returns undefined (or []) for a process that is gone or not ours to read.
 */
export function procText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

export function procBytes(path: string): Buffer | undefined {
  try {
    return readFileSync(path);
  } catch {
    return undefined;
  }
}

export function procLink(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}

/** The file name of a /proc/<pid>/exe target, without the " (deleted)" the kernel appends to a removed file. */
export const exeBasename = (target: string): string =>
  target
    .replace(/ \(deleted\)$/, '')
    .split('/')
    .pop() ?? '';

/** The parent pid from /proc/<pid>/status; undefined when the process is gone. */
export function parentPid(pid: number): number | undefined {
  const m = /^PPid:\s*(\d+)$/m.exec(procText(`/proc/${pid}/status`) ?? '');
  return m?.[1] === undefined ? undefined : Number(m[1]);
}

/**
 * When a living process started (clock ticks after boot, field 22 of /proc/<pid>/stat): a pid seen again with the
 * same start is the same process, not a reused pid. Undefined when it is gone or a zombie (it runs nothing more).
 */
export function startTicks(pid: number): number | undefined {
  const stat = procText(`/proc/${pid}/stat`);
  // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
  const fields = stat?.slice(stat.lastIndexOf(')') + 2).split(' ');
  const [state, start] = [fields?.[0], fields?.[19]];
  return state === undefined || state === 'Z' || state === 'X' || start === undefined || !/^\d+$/.test(start) ? undefined : Number(start);
}

/** Every pid in /proc (this process included). */
export function procPids(): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  return entries.filter((e) => /^\d+$/.test(e)).map(Number);
}
