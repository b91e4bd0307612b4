import { readdir, readFile } from 'node:fs/promises';

export interface MarkedProcess {
  pid: number;
  command: string;
}

/**
 * Host processes whose environment holds `NAME=value` exactly. Only the marker is compared; no
 * other part of any process's environment is kept or returned.
 */
export async function findProcessesWithEnvMarker(name: string, value: string): Promise<MarkedProcess[]> {
  const needle = Buffer.from(`${name}=${value}\0`);
  const out: MarkedProcess[] = [];
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return out;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      const environ = await readFile(`/proc/${pid}/environ`);
      // The last entry may lack its terminating NUL.
      if (!Buffer.concat([environ, Buffer.from([0])]).includes(needle)) continue;
      const cmdline = await readFile(`/proc/${pid}/cmdline`);
      out.push({ pid, command: cmdline.toString('utf8').replaceAll('\0', ' ').trim().slice(0, 200) });
    } catch {
      // Gone already, or not ours to read.
    }
  }
  return out;
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

/** Host processes whose command line contains `needle` (a per-execution nonce marker). */
export async function findProcessesWithCmdline(needle: string): Promise<MarkedProcess[]> {
  const out: MarkedProcess[] = [];
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return out;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const command = (await readFile(`/proc/${entry}/cmdline`)).toString('utf8').replaceAll('\0', ' ').trim();
      if (command.includes(needle)) out.push({ pid: Number(entry), command: command.slice(0, 200) });
    } catch {
      // Gone already.
    }
  }
  return out;
}
