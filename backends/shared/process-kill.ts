import { findProcessesWithEnvMarker } from '../../lab/process-scan.js';
import { commOf, processTree } from './host-proc.js';

/** Killing host processes from outside the box; a process that is already gone is not an error. */

export function killQuietly(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

/** Signals the whole process group `pgid` (a child spawned detached leads its own group). */
export function killGroup(pgid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  killQuietly(-pgid, signal);
}

/** SIGKILLs `root` and every process below it (one snapshot of /proc). */
export async function killTree(root: number): Promise<void> {
  for (const pid of await processTree(root)) killQuietly(pid);
}

export interface KilledProcess {
  pid: number;
  /** The short command name, read before the kill. */
  comm: string;
}

/** SIGKILLs every host process whose environment holds `name=value` (an environment's marker) and says which. */
export async function killMarkedProcesses(name: string, value: string): Promise<KilledProcess[]> {
  const out: KilledProcess[] = [];
  for (const p of await findProcessesWithEnvMarker(name, value)) {
    out.push({ pid: p.pid, comm: await commOf(p.pid) });
    killQuietly(p.pid);
  }
  return out;
}
