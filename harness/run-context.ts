import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { LabHandle } from '../backends/contract.js';
import type { LabTraffic, WitnessProof } from '../lab/lab-session.js';
import { makeCanaries, plantDecoyFiles, type CanarySet } from '../lab/canaries.js';
import { startHostDecoys, type HostDecoys } from '../lab/host-decoys.js';
import { onProcessExit } from '../lab/netns/exit-hook.js';
import type { OwnershipJournal } from './ownership/journal.js';

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
  labTraffic?: (fromMs: number, toMs: number) => Promise<LabTraffic>;
  /** Sends the witness's proof-of-life into the current window (never throws; a failed proof comes back not ok). */
  proveLabWitness?: () => Promise<WitnessProof>;
  /** Why there is no lab, when there is none: network probes become not-applicable with it. */
  noLabReason?: string;
  dispose(): Promise<void>;
}

export interface LabForRun {
  /** Absent for a witness on another machine: there is no namespace here to start boxes in. */
  handle?: LabHandle;
  canaries: { label: string; value: string }[];
  trafficBetween(fromMs: number, toMs: number): LabTraffic | Promise<LabTraffic>;
  proveWitness(): Promise<WitnessProof>;
}

/** The run's own corner of the host: scratch directory, decoy secrets and credentials, decoy process and socket. */
export async function openRunContext(
  runId: string,
  options: {
    scratchRoot?: string;
    lab?: LabForRun;
    noLabReason?: string;
    liveTraffic?: (fromMs: number, toMs: number) => LabTraffic;
    liveProve?: () => Promise<WitnessProof>;
    /** Where the scratch directory and the decoy process are recorded before they exist. */
    journal?: OwnershipJournal;
  } = {},
): Promise<RunContext> {
  // Named up front (not mkdtemp) so the journal holds the exact path before the directory exists; mkdir refuses an existing one.
  const scratchDir = join(options.scratchRoot ?? tmpdir(), `sandcheck-${runId}-${randomBytes(3).toString('hex')}`);
  const scratch = { kind: 'dir', path: scratchDir } as const;
  options.journal?.own(scratch);
  await mkdir(scratchDir, { mode: 0o700 });
  const decoyDir = join(scratchDir, 'decoy-home');
  const canaries = makeCanaries();
  const marker = { [RUN_MARKER]: runId };
  let hostDecoys: HostDecoys;
  try {
    await plantDecoyFiles(decoyDir, canaries);
    hostDecoys = await startHostDecoys({ scratchDir, runMarker: marker, ...(options.journal ? { journal: options.journal } : {}) });
  } catch (err) {
    await rm(scratchDir, { recursive: true, force: true });
    options.journal?.release(scratch);
    throw err;
  }
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
    ...(options.lab?.handle ? { lab: options.lab.handle } : {}),
    ...(options.lab ? { labTraffic: async (a: number, b: number) => options.lab!.trafficBetween(a, b), proveLabWitness: () => options.lab!.proveWitness() } : {}),
    ...(options.liveTraffic ? { labTraffic: async (a: number, b: number) => options.liveTraffic!(a, b) } : {}),
    ...(options.liveProve ? { proveLabWitness: options.liveProve } : {}),
    ...(options.noLabReason ? { noLabReason: options.noLabReason } : {}),
    async dispose() {
      await hostDecoys.stop();
      unregister();
      await rm(scratchDir, { recursive: true, force: true });
      options.journal?.release(scratch);
    },
  };
}
