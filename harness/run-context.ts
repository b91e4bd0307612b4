import { mkdir, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { LabHandle } from '../model/backend-contract.js';
import type { LabTraffic, WitnessProof } from '../lab/lab-session.js';
import { makeCanaries, plantDecoyFiles, type CanarySet } from '../lab/canaries.js';
import { startHostDecoys, type HostDecoys } from '../lab/host-decoys.js';
import { onProcessExit } from '../lab/netns/exit-hook.js';
import type { OwnershipJournal } from '../core/ownership-journal.js';

export { RUN_MARKER } from '../model/backend-contract.js';
import { RUN_MARKER } from '../model/backend-contract.js';

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
  /** Real container-daemon sockets whose event logs witness a box's nonce-labelled API call (searching probes). */
  watchDaemons: string[];
  lab?: LabHandle;
  /** What the lab's decoys and packet witness saw in a time window (ms since epoch); without `toMs`, until now. */
  labTraffic?: (fromMs: number, toMs?: number) => Promise<LabTraffic>;
  /** Sends the witness's proof-of-life into the current window (never throws; a failed proof comes back not ok). */
  proveLabWitness?: () => Promise<WitnessProof>;
  /** Why there is no lab, when there is none: network probes become not-applicable with it. */
  noLabReason?: string;
  dispose(): Promise<void>;
}

/**
 * The volume events of a container daemon's own log between two times (ms since epoch) that contain
 * `needle` (at most 20, each cut to 300 characters): `GET /events?since&until` on its socket, which returns
 * once `until` has passed. Volumes only: a searching payload's witnessed call is a volume named with the
 * nonce, while exec events carry every payload's argv (and so its nonce) whatever it did. Reads only; never
 * throws (an unreadable log comes back as `error`).
 */
export function readDaemonEvents(socketPath: string, fromMs: number, toMs: number, needle: string): Promise<{ events: string[]; error?: string }> {
  const since = (fromMs / 1000).toFixed(3);
  const until = (toMs / 1000).toFixed(3);
  return new Promise((resolve) => {
    let body = '';
    const done = (error?: string): void => {
      const events = body
        .split('\n')
        .filter((l) => l.includes(needle))
        .slice(0, 20)
        .map((l) => l.slice(0, 300));
      resolve(error === undefined ? { events } : { events, error });
    };
    const req = request(
      {
        socketPath,
        path: `/events?since=${since}&until=${until}&filters=${encodeURIComponent(JSON.stringify({ type: ['volume'] }))}`,
        method: 'GET',
        timeout: 10_000,
      },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          if (body.length < 4 * 1024 * 1024) body += d;
        });
        res.on('end', () => done(res.statusCode === 200 ? undefined : `HTTP ${res.statusCode ?? '?'}`));
        res.on('error', (e) => done(e.message));
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', (e) => done(e.message));
    req.end();
  });
}

export interface LabForRun {
  /** Absent for a witness on another machine: there is no namespace here to start boxes in. */
  handle?: LabHandle;
  canaries: { label: string; value: string }[];
  /** Without `toMs`: until now, and for the lab's decoys until they logged what was queued before the call. */
  trafficBetween(fromMs: number, toMs?: number): LabTraffic | Promise<LabTraffic>;
  proveWitness(): Promise<WitnessProof>;
}

/** The run's own corner of the host: scratch directory, decoy secrets and credentials, decoy process and socket. */
export async function openRunContext(
  runId: string,
  options: {
    scratchRoot?: string;
    lab?: LabForRun;
    noLabReason?: string;
    liveTraffic?: (fromMs: number, toMs?: number) => LabTraffic;
    liveProve?: () => Promise<WitnessProof>;
    /** Where the scratch directory and the decoy process are recorded before they exist. */
    journal?: OwnershipJournal;
    /** Real container-daemon sockets to watch (their event logs are read, nothing else). */
    watchDaemons?: string[];
  } = {},
): Promise<RunContext> {
  // Named up front (not mkdtemp) so the journal holds the exact path before the directory exists; mkdir refuses an existing one.
  const scratchDir = join(options.scratchRoot ?? tmpdir(), `sandcheck-${runId}-${randomBytes(3).toString('hex')}`);
  const scratch = { kind: 'dir', path: scratchDir } as const;
  options.journal?.own(scratch);
  // 0700: the decoy trees below are loose (any uid may read them) only for a box given a place inside.
  await mkdir(scratchDir, { mode: 0o700 });
  const decoyDir = join(scratchDir, 'decoy-home');
  const canaries = makeCanaries();
  const marker = { [RUN_MARKER]: runId };
  let hostDecoys: HostDecoys;
  try {
    await plantDecoyFiles(decoyDir, canaries);
    hostDecoys = await startHostDecoys({
      scratchDir,
      runId,
      runMarker: marker,
      ...(options.lab?.handle ? { labNetnsPath: options.lab.handle.netnsPath } : {}),
      ...(options.journal ? { journal: options.journal } : {}),
    });
  } catch (err) {
    await rm(scratchDir, { recursive: true, force: true });
    options.journal?.release(scratch);
    throw err;
  }
  canaries.all.push(
    { label: 'process:decoy-memory', value: hostDecoys.processCanary },
    { label: 'socket:ssh-agent identity', value: hostDecoys.agentCanary },
    ...(hostDecoys.abstractCanary !== undefined ? [{ label: 'socket:abstract decoy reply', value: hostDecoys.abstractCanary }] : []),
    ...hostDecoys.keys.map((k) => ({ label: `keyring:${k.ring} key`, value: k.canary })),
    { label: 'lateral:listener', value: `SCNRYLATERAL${randomBytes(10).toString('hex')}` },
    { label: 'companion:shared memory', value: `SCNRYSHM${randomBytes(10).toString('hex')}` },
    ...(options.lab?.canaries ?? []),
  );
  const pid = hostDecoys.processPid;
  const unregister = onProcessExit(() => {
    try {
      // SIGTERM: the decoy invalidates its user-keyring key before it goes.
      process.kill(pid, 'SIGTERM');
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
    watchDaemons: [...(options.watchDaemons ?? [])],
    ...(options.lab?.handle ? { lab: options.lab.handle } : {}),
    ...(options.lab
      ? { labTraffic: async (a: number, b?: number) => options.lab!.trafficBetween(a, b), proveLabWitness: () => options.lab!.proveWitness() }
      : {}),
    ...(options.liveTraffic ? { labTraffic: async (a: number, b?: number) => options.liveTraffic!(a, b) } : {}),
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
