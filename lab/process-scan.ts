import { readdir, readFile } from 'node:fs/promises';

export interface MarkedProcess {
  pid: number;
  command: string;
}

const commandOf = async (pid: number): Promise<string> =>
  (await readFile(`/proc/${pid}/cmdline`)).toString('utf8').replaceAll('\0', ' ').trim();

/** Host processes (other than this one) for which `matches` says yes; vanished or unreadable ones are skipped. */
async function scan(matches: (pid: number) => Promise<boolean>): Promise<MarkedProcess[]> {
  const entries = await readdir('/proc').catch(() => [] as string[]);
  const out: MarkedProcess[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const pid = Number(entry);
    try {
      if (await matches(pid)) out.push({ pid, command: (await commandOf(pid)).slice(0, 200) });
    } catch {
      // Gone already, or not ours to read.
    }
  }
  return out;
}

/**
 * Host processes whose environment holds `NAME=value` exactly. Only the marker is compared; no
 * other part of any process's environment is kept or returned.
 */
export function findProcessesWithEnvMarker(name: string, value: string): Promise<MarkedProcess[]> {
  const needle = Buffer.from(`${name}=${value}\0`);
  // The last entry may lack its terminating NUL.
  return scan(async (pid) => Buffer.concat([await readFile(`/proc/${pid}/environ`), Buffer.from([0])]).includes(needle));
}

/** Host processes whose command line contains `needle` (a per-execution nonce marker). */
export function findProcessesWithCmdline(needle: string): Promise<MarkedProcess[]> {
  return scan(async (pid) => (await commandOf(pid)).includes(needle));
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
