import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';

/** The machine a figure was measured on (no hostname, no environment). */
export interface Machine {
  cpu: string;
  cores: number;
  memGiB: number;
  kernel: string;
  node: string;
}

export function machine(): Machine {
  const c = cpus();
  return {
    cpu: c[0]?.model.trim() ?? 'unknown',
    cores: c.length,
    memGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    kernel: `Linux ${release()}`,
    node: process.version,
  };
}

export function describeMachine(m: Machine): string {
  return `${m.cores}× ${m.cpu}, ${m.memGiB} GiB, ${m.kernel}, node ${m.node}`;
}

/** 1/5/15-minute load averages, rounded. */
export function load(): [number, number, number] {
  const [a = 0, b = 0, c = 0] = loadavg();
  return [Math.round(a * 100) / 100, Math.round(b * 100) / 100, Math.round(c * 100) / 100];
}

/** VmHWM (peak resident set) of this process in MB, as the kernel reports it from outside the heap. */
export function peakRssMb(): number | undefined {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return m?.[1] !== undefined ? Math.round(Number(m[1]) / 1024) : undefined;
  } catch {
    return undefined;
  }
}

/** Resets VmHWM to the current RSS (writing 5 to clear_refs), so each backend's peak is its own. */
export function resetPeakRss(): boolean {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}
