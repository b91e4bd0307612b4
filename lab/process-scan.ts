import { procBytes, procPids } from '../core/proc-files.js';

export interface MarkedProcess {
  pid: number;
  command: string;
}

const commandOf = (pid: number): string | undefined => procBytes(`/proc/${pid}/cmdline`)?.toString('utf8').replaceAll('\0', ' ').trim();

/** Host processes (other than this one) for which `matches` says yes; vanished or unreadable ones are skipped. */
function scan(matches: (pid: number) => boolean): MarkedProcess[] {
  const out: MarkedProcess[] = [];
  for (const pid of procPids()) {
    if (pid === process.pid || !matches(pid)) continue;
    const command = commandOf(pid);
    if (command !== undefined) out.push({ pid, command: command.slice(0, 200) });
  }
  return out;
}

/**
 * Host processes whose environment holds `NAME=value` exactly. Only the marker is compared; no
 * other part of any process's environment is kept or returned.
 */
export async function findProcessesWithEnvMarker(name: string, value: string): Promise<MarkedProcess[]> {
  const needle = Buffer.from(`${name}=${value}\0`);
  return scan((pid) => {
    const environ = procBytes(`/proc/${pid}/environ`);
    // The last entry may lack its terminating NUL.
    return environ !== undefined && Buffer.concat([environ, Buffer.from([0])]).includes(needle);
  });
}

/** Host processes whose command line contains `needle` (a per-execution nonce marker). */
export async function findProcessesWithCmdline(needle: string): Promise<MarkedProcess[]> {
  return scan((pid) => commandOf(pid)?.includes(needle) ?? false);
}

export function killPids(pids: readonly number[], signal: NodeJS.Signals = 'SIGKILL'): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
}
