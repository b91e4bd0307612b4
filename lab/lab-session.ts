import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LabHandle } from '../model/backend-contract.js';
import { BoundedRing } from './bounded-ring.js';
import { CANARY_PREFIX, type Canary } from './canaries.js';
import { DEFAULT_DNS_ANSWERS, defaultLabServices, type LabConfigInput, type LabServiceConfig } from './decoys/lab-config.js';
import type { DecoyEvent } from './decoys/decoy-log.js';
import type { LabServerCommand, LabServerLine } from './decoys/lab-server.js';
import { LAB_RESOLVER } from './netns/addresses.js';
import { minimalEnv } from './netns/capture.js';
import { createLabNamespace, type LabNamespace } from './netns/netns.js';
import { resolvConfFor } from './netns/enter.js';
import { startPacketWitness, type PacketWitness } from './netns/packet-witness.js';
import type { Packet } from './netns/packet.js';
import { LabError } from './netns/errors.js';
import { packageRoot } from '../core/paths.js';
import { decoySocketDrops } from './netns/socket-drops.js';
import { probeLabSupport } from './netns/support.js';
import type { LabTraffic } from '../model/lab-traffic.js';
import { WitnessLedger, type WitnessProof } from './witness-ledger.js';

const READY_TIMEOUT_MS = 15_000;
const MAX_EVENTS = 20_000;
const MAX_EVENT_BYTES = 48 * 2 ** 20;
const MAX_PACKETS = 20_000;
const PROOF_TIMEOUT_MS = 3000;
/**
 * How long the decoy services may take to confirm they logged what reached them (a busy machine is slow, not
 * blind); below a remote witness client's 30 s call bound, so that the client hears why.
 */
const SYNC_TIMEOUT_MS = 20_000;
/** Proof-of-life queries go to `<nonce>` + this suffix: a name no box knows in advance. */
export const PROOF_SUFFIX = '.witness.sandcheck.invalid';

/** What a run's lab saw, for one time window, and whether its witnesses could see. */
export type { LabTraffic } from '../model/lab-traffic.js';

export interface LabSession {
  handle: LabHandle;
  /** Decoy credentials served by the fake metadata service. */
  canaries: Canary[];
  /**
   * Proof of life of the witnesses: the harness sends one marked DNS query from inside the lab to the lab
   * resolver and waits until the decoy log and the packet capture both saw it; it also reads the kernel's
   * drop counters. Call it after a network probe ran and before `trafficBetween` for that window.
   */
  proveWitness(): Promise<WitnessProof>;
  /**
   * Everything seen between two instants (ms since epoch), without the harness's own proof traffic. It first
   * waits until the decoy services logged what was queued on their sockets before the call (a datagram a box
   * sent just before it exited is still in a socket queue, and its event is stamped when it is logged); throws
   * WITNESS_FAILED if they cannot confirm it. Without `toMs`, the window ends once they confirmed, so such a
   * late event is in it. The packet capture is not waited for here: `proveWitness` does that.
   */
  trafficBetween(fromMs: number, toMs?: number): Promise<LabTraffic>;
  close(): Promise<{ events: number; packets: number; leftovers: string[] }>;
}

function labServerArgv(config: LabConfigInput, runId: string): string[] {
  // From source (tests, tsx) the server is TypeScript beside this file; otherwise tsc's compiled file in dist/, also
  // when this module runs from the CLI's bundle (dist/cli/chunks), where it has no folder of its own.
  const fromSource = import.meta.url.endsWith('.ts');
  const entry = fromSource
    ? join(dirname(fileURLToPath(import.meta.url)), 'decoys', 'lab-server.ts')
    : join(packageRoot(), 'dist', 'lab', 'decoys', 'lab-server.js');
  // The trailing marker names the run in the process list (the server ignores it).
  return [process.execPath, ...(fromSource ? ['--import', 'tsx'] : []), entry, JSON.stringify(config), `sandcheck-lab-${runId}`];
}

const metadataCanary = (kind: string): string => `${CANARY_PREFIX}${kind}${randomBytes(10).toString('hex')}`;

/** Proof traffic: the marked queries themselves and the resolver's answers to their source ports. */
class ProofFilter {
  readonly names = new Set<string>();
  readonly ports = new Set<number>();

  isProofEvent(e: DecoyEvent): boolean {
    return (e.dnsNames ?? []).some((n) => this.names.has(n.toLowerCase()));
  }

  isProofPacket(p: Packet): boolean {
    if ([...this.names].some((n) => p.raw.includes(n))) return true;
    return p.src === LAB_RESOLVER && p.srcPort === 53 && p.dstPort !== undefined && this.ports.has(p.dstPort);
  }
}

/**
 * The run's sealed outside world: its own network namespace with decoys on every address, the
 * decoy services inside it, and a packet witness. Nothing in it routes to a real network.
 */
export interface OpenLabOptions {
  /** Decoy events kept (a ring: the oldest go first when it is full); tests make it small. */
  maxEvents?: number;
  /** Packets kept by the capture's ring. */
  maxPackets?: number;
}

export async function openLab(runId: string, cwd: string, options: OpenLabOptions = {}): Promise<LabSession> {
  const ns: LabNamespace = await createLabNamespace({ runId });
  let witness: PacketWitness | undefined;
  try {
    const resolvConfPath = await resolvConfFor(ns);
    const creds = {
      accessKeyId: metadataCanary('IMDSAKIA'),
      secretAccessKey: metadataCanary('IMDSSECRET'),
      token: metadataCanary('IMDSTOKEN'),
      imdsToken: metadataCanary('IMDSV2'),
    };
    // The resolver answers on every address (wildcard), so whatever resolv.conf a box has, its queries land here.
    const services: LabServiceConfig[] = defaultLabServices().filter((s) => s.kind !== 'dns');
    services.push(
      { kind: 'dns', host: '0.0.0.0', port: 53, answers: DEFAULT_DNS_ANSWERS },
      { kind: 'dns', host: '::', port: 53, answers: DEFAULT_DNS_ANSWERS },
    );
    // The server streams every event to us and keeps none itself; the session's ring is the store.
    const config: LabConfigInput = { canaries: creds, services, maxEvents: 0 };
    const events = new BoundedRing<DecoyEvent>(options.maxEvents ?? MAX_EVENTS, MAX_EVENT_BYTES);
    const proofs = new ProofFilter();
    const seenProofEvents = new Set<string>();
    const sentProofs = new Map<string, (line: LabServerLine) => void>();
    const syncs = new Map<string, () => void>();
    // The lab's services get PATH only: the harness's environment holds decoy and maybe real credentials.
    const server = ns.spawn(labServerArgv(config, runId), {
      cwd,
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
      reject: false,
      buffer: false,
      env: minimalEnv(),
      extendEnv: false,
    });
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the lab decoy services did not start in time')), READY_TIMEOUT_MS);
      if (!server.stdout) return reject(new Error('no stdout from the lab server'));
      createInterface({ input: server.stdout }).on('line', (line) => {
        let msg: LabServerLine;
        try {
          msg = JSON.parse(line) as LabServerLine;
        } catch {
          return;
        }
        if (msg.type === 'ready') {
          clearTimeout(timer);
          resolve();
        } else if (msg.type === 'event') {
          if (proofs.isProofEvent(msg.event)) for (const n of msg.event.dnsNames ?? []) seenProofEvents.add(n.toLowerCase());
          else events.push(msg.event, Date.parse(msg.event.time), line.length);
        } else if (msg.type === 'witness-query-sent' || msg.type === 'witness-query-failed') sentProofs.get(msg.name)?.(msg);
        else if (msg.type === 'synced') syncs.get(msg.id)?.();
        else if (msg.type === 'error') {
          clearTimeout(timer);
          reject(new Error(`lab decoy services failed: ${msg.code}: ${msg.message}`));
        }
      });
      void server.then((r) => {
        clearTimeout(timer);
        reject(new Error(`the lab server exited early (${r.exitCode ?? r.signal})`));
      });
    });
    await ready;
    const seenProofPackets = new Set<string>();
    witness = await startPacketWitness(ns, {
      maxPackets: options.maxPackets ?? MAX_PACKETS,
      keep: 'latest',
      onPacket: (p) => {
        for (const n of proofs.names) if (p.raw.includes(n)) seenProofPackets.add(n);
      },
    });
    const w = witness;
    const ledger = new WitnessLedger('lab');
    const serverPid = server.pid;

    const readDrops = async (): Promise<{ drops?: number; notes: string[] }> => {
      const stats = await w.requestStats();
      const sockets = serverPid === undefined ? undefined : await decoySocketDrops(serverPid);
      const notes: string[] = [];
      if (stats === undefined) notes.push('tcpdump did not report its pcap statistics');
      if (sockets === undefined) notes.push("the decoys' socket counters could not be read");
      if (stats === undefined || sockets === undefined) return { notes };
      return { drops: stats.droppedByKernel + stats.droppedByInterface + sockets, notes };
    };
    const baseline = await readDrops();
    if (baseline.drops !== undefined) ledger.sample(Date.now(), baseline.drops);

    const proveWitness = async (): Promise<WitnessProof> => {
      const name = `${randomBytes(8).toString('hex')}${PROOF_SUFFIX}`;
      proofs.names.add(name);
      const sentMs = Date.now();
      const notes: string[] = [];
      const sent = new Promise<LabServerLine>((resolve) => sentProofs.set(name, resolve));
      const cmd: LabServerCommand = { type: 'witness-query', name, server: LAB_RESOLVER, port: 53 };
      server.stdin?.write(`${JSON.stringify(cmd)}\n`);
      const outcome = await Promise.race([sent, sleep(PROOF_TIMEOUT_MS).then(() => undefined)]);
      sentProofs.delete(name);
      if (outcome?.type === 'witness-query-sent') proofs.ports.add(outcome.port);
      else
        notes.push(
          outcome?.type === 'witness-query-failed' ? `the proof query could not be sent: ${outcome.message}` : 'the lab server did not send the proof query',
        );
      const deadline = sentMs + PROOF_TIMEOUT_MS;
      while (outcome?.type === 'witness-query-sent' && !(seenProofEvents.has(name) && seenProofPackets.has(name)) && Date.now() < deadline) await sleep(20);
      if (outcome?.type === 'witness-query-sent') {
        if (!seenProofEvents.has(name)) notes.push(`the lab resolver's log did not record the proof query within ${PROOF_TIMEOUT_MS} ms`);
        if (!seenProofPackets.has(name)) notes.push(`the packet capture did not record the proof query within ${PROOF_TIMEOUT_MS} ms`);
      }
      const drops = await readDrops();
      notes.push(...drops.notes);
      const doneMs = Date.now();
      if (drops.drops !== undefined) ledger.sample(doneMs, drops.drops);
      const proof: WitnessProof = { marker: name, sentMs, doneMs, ok: notes.length === 0, notes };
      ledger.proof(proof);
      return proof;
    };

    const exited = server.then(() => 'exited' as const);
    let syncFailure: string | undefined;
    const logged = async (): Promise<void> => {
      const hint = 'the lab server stopped or is stuck, so its decoys cannot witness; run again, and if it repeats, report it with the run directory';
      // Once it failed, every later window fails at once (a stuck server would cost each one the whole wait).
      if (syncFailure !== undefined) throw new LabError('WITNESS_FAILED', syncFailure, { hint });
      const id = randomBytes(8).toString('hex');
      let timer: NodeJS.Timeout | undefined;
      const done = new Promise<'synced' | 'timeout'>((resolve) => {
        syncs.set(id, () => resolve('synced'));
        timer = setTimeout(() => resolve('timeout'), SYNC_TIMEOUT_MS);
      });
      const cmd: LabServerCommand = { type: 'sync', id };
      server.stdin?.write(`${JSON.stringify(cmd)}\n`);
      const outcome = await Promise.race([done, exited]);
      clearTimeout(timer);
      syncs.delete(id);
      if (outcome === 'synced') return;
      syncFailure =
        outcome === 'exited'
          ? "the lab's decoy server has exited: what boxes sent to its decoys is no longer logged"
          : `the lab's decoy services did not confirm within ${SYNC_TIMEOUT_MS} ms that they had logged what reached them`;
      throw new LabError('WITNESS_FAILED', syncFailure, { hint });
    };

    return {
      handle: { netnsPath: ns.path, resolvConfPath },
      canaries: Object.entries(creds).map(([k, value]) => ({ label: `metadata:${k}`, value })),
      proveWitness,
      async trafficBetween(fromMs, endMs) {
        await logged();
        const toMs = endMs ?? Date.now();
        const stats = w.stats();
        return {
          events: events.between(fromMs, toMs),
          packets: w.packets().filter((p) => p.time >= fromMs && p.time <= toMs && !proofs.isProofPacket(p)),
          witness: ledger.health(fromMs, toMs, [
            { store: 'decoy log', ms: events.lastEvictedMs },
            { store: 'packet capture', ms: stats.lastEvictedMs },
          ]),
        };
      },
      async close() {
        const packets = await w.stop();
        server.stdin?.end();
        const report = await ns.destroy();
        return {
          events: events.size + events.evicted,
          packets: packets.length,
          leftovers: report.survivors.map((pid) => `process ${pid} still held the lab namespace`),
        };
      },
    };
  } catch (err) {
    await witness?.stop().catch(() => undefined);
    await ns.destroy().catch(() => undefined);
    throw err;
  }
}

export type { WitnessProof };
export { probeLabSupport };
