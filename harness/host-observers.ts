import { stat } from 'node:fs/promises';
import type { Environment, GotFile } from '../backends/contract.js';
import type { Observation } from './model/probe.js';
import { readProcessIdentity, type ProcessIdentity } from '../lab/host-process.js';

/** Polls the box's host pids: each process's identity (peak memory kept current) and the most alive at once. */
export function startProcessSampler(env: Environment, intervalMs = 100): { stop(): Promise<{ processes: ProcessIdentity[]; maxConcurrent: number }> } {
  const seen = new Map<number, ProcessIdentity>();
  let maxConcurrent = 0;
  let busy = false;
  const tick = async (): Promise<void> => {
    if (busy || !env.hostPids) return;
    busy = true;
    try {
      const pids = await env.hostPids();
      maxConcurrent = Math.max(maxConcurrent, pids.length);
      for (const pid of pids) {
        const known = seen.get(pid);
        if (!known && seen.size >= 64) continue;
        const id = await readProcessIdentity(pid);
        if (!id) continue;
        seen.set(pid, known ? { ...known, peakRssBytes: Math.max(known.peakRssBytes ?? 0, id.peakRssBytes ?? 0) } : id);
      }
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void tick(), intervalMs);
  void tick();
  return {
    async stop() {
      clearInterval(timer);
      while (busy) await new Promise((r) => setTimeout(r, 10));
      return { processes: [...seen.values()], maxConcurrent };
    },
  };
}

/** Heartbeat file size right after destroy and 1.2 s later; undefined when nothing was ever written. */
export async function watchHeartbeat(path: string): Promise<Observation['heartbeat']> {
  const size = async (): Promise<number> => (await stat(path).catch(() => undefined))?.size ?? -1;
  const afterDestroyBytes = await size();
  if (afterDestroyBytes < 0) return undefined;
  await new Promise((r) => setTimeout(r, 1200));
  return { afterDestroyBytes, laterBytes: await size() };
}

export function scanArtifacts(files: readonly GotFile[], values: readonly string[]): { path: string; value: string }[] {
  const hits: { path: string; value: string }[] = [];
  for (const f of files) {
    if (!f.content) continue;
    const buf = Buffer.from(f.content);
    for (const v of values) if (buf.includes(v)) hits.push({ path: f.path, value: v });
  }
  return hits;
}
