import { readdir, statfs } from 'node:fs/promises';
import { freemem, tmpdir, totalmem } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';

export interface HealthSample {
  memAvailableBytes: number;
  diskFreeBytes: number;
  processCount: number;
}

export interface HostHealth {
  before: HealthSample;
  /** Worst value of each gauge while the probe ran. */
  worst: HealthSample;
  after: HealthSample;
  maxEventLoopDelayMs: number;
  memTotalBytes: number;
}

async function sample(dir: string): Promise<HealthSample> {
  const [fs, entries] = await Promise.all([statfs(dir).catch(() => undefined), readdir('/proc').catch(() => [] as string[])]);
  return {
    memAvailableBytes: freemem(),
    diskFreeBytes: fs ? fs.bavail * fs.bsize : -1,
    processCount: entries.filter((e) => /^\d+$/.test(e)).length,
  };
}

/** Samples the machine while a probe runs: the watchdog that notices a box harming its host. */
export async function startHostHealth(dir = tmpdir(), intervalMs = 200): Promise<{ stop(): Promise<HostHealth> }> {
  const before = await sample(dir);
  const worst = { ...before };
  const loop = monitorEventLoopDelay({ resolution: 20 });
  loop.enable();
  const take = async (): Promise<HealthSample> => {
    const s = await sample(dir);
    worst.memAvailableBytes = Math.min(worst.memAvailableBytes, s.memAvailableBytes);
    worst.diskFreeBytes = Math.min(worst.diskFreeBytes, s.diskFreeBytes);
    worst.processCount = Math.max(worst.processCount, s.processCount);
    return s;
  };
  const timer = setInterval(() => void take(), intervalMs);
  return {
    async stop(): Promise<HostHealth> {
      clearInterval(timer);
      loop.disable();
      const after = await take();
      return { before, worst, after, maxEventLoopDelayMs: loop.max / 1e6, memTotalBytes: totalmem() };
    },
  };
}

export interface HarmThresholds {
  /** Memory available may not fall below this fraction of total. */
  minMemFraction: number;
  minDiskFreeBytes: number;
  maxExtraProcesses: number;
  maxEventLoopDelayMs: number;
}

export const DEFAULT_HARM: HarmThresholds = {
  minMemFraction: 0.1,
  minDiskFreeBytes: 512 * 1024 * 1024,
  maxExtraProcesses: 2000,
  maxEventLoopDelayMs: 2000,
};

/** Reasons the host was harmed, if any. */
export function hostHarm(h: HostHealth, t: HarmThresholds = DEFAULT_HARM): string[] {
  const out: string[] = [];
  if (h.worst.memAvailableBytes < h.memTotalBytes * t.minMemFraction)
    out.push(`host memory available fell to ${Math.round(h.worst.memAvailableBytes / 2 ** 20)} MiB`);
  if (h.worst.diskFreeBytes >= 0 && h.worst.diskFreeBytes < t.minDiskFreeBytes)
    out.push(`host free disk fell to ${Math.round(h.worst.diskFreeBytes / 2 ** 20)} MiB`);
  if (h.worst.processCount - h.before.processCount > t.maxExtraProcesses)
    out.push(`host process count rose by ${h.worst.processCount - h.before.processCount}`);
  if (h.maxEventLoopDelayMs > t.maxEventLoopDelayMs) out.push(`harness event loop stalled for ${Math.round(h.maxEventLoopDelayMs)} ms`);
  return out;
}
