import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { LabHandle } from '../backends/contract.js';
import type { LabTraffic } from '../lab/lab-session.js';
import { makeCanaries, plantDecoyFiles, type CanarySet } from '../lab/canaries.js';
import { startHostDecoys, type HostDecoys } from '../lab/host-decoys.js';
import { onProcessExit } from '../lab/netns/exit-hook.js';

export const RUN_MARKER = 'SANDCHECK_RUN';

/** Short, lowercase, safe in namespace, cgroup and container names. */
export function newRunId(): string {
  return `r${randomBytes(5).toString('hex')}`;
}

export interface RunContext {
  runId: string;
  scratchDir: string;
  decoyDir: string;
  canaries: CanarySet;
  controllerEnv: Record<string, string>;
  hostDecoys: HostDecoys;
  lab?: LabHandle;
  /** What the lab's decoys and packet witness saw in a time window (ms since epoch). */
  labTraffic?: (fromMs: number, toMs: number) => LabTraffic;
  /** Why there is no lab, when there is none: network probes become not-applicable with it. */
  noLabReason?: string;
  dispose(): Promise<void>;
}

export interface LabForRun {
  handle: LabHandle;
  canaries: { label: string; value: string }[];
  trafficBetween(fromMs: number, toMs: number): LabTraffic;
}

/** The run's own corner of the host: scratch directory, decoy secrets and credentials, decoy process and socket. */
export async function openRunContext(
  runId: string,
  options: { scratchRoot?: string; lab?: LabForRun; noLabReason?: string; liveTraffic?: (fromMs: number, toMs: number) => LabTraffic } = {},
): Promise<RunContext> {
  const scratchDir = await mkdtemp(join(options.scratchRoot ?? tmpdir(), `sandcheck-${runId}-`));
  const decoyDir = join(scratchDir, 'decoy-home');
  const canaries = makeCanaries();
  await plantDecoyFiles(decoyDir, canaries);
  const marker = { [RUN_MARKER]: runId };
  const hostDecoys = await startHostDecoys({ scratchDir, runMarker: marker });
  canaries.all.push(
    { label: 'process:decoy-memory', value: hostDecoys.processCanary },
    { label: 'lateral:listener', value: `SCNRYLATERAL${randomBytes(10).toString('hex')}` },
    ...(options.lab?.canaries ?? []),
  );
  const pid = hostDecoys.processPid;
  const unregister = onProcessExit(() => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  return {
    runId,
    scratchDir,
    decoyDir,
    canaries,
    controllerEnv: { ...canaries.env, ...marker },
    hostDecoys,
    ...(options.lab ? { lab: options.lab.handle, labTraffic: (a: number, b: number) => options.lab!.trafficBetween(a, b) } : {}),
    ...(options.liveTraffic ? { labTraffic: options.liveTraffic } : {}),
    ...(options.noLabReason ? { noLabReason: options.noLabReason } : {}),
    async dispose() {
      await hostDecoys.stop();
      unregister();
      await rm(scratchDir, { recursive: true, force: true });
    },
  };
}
