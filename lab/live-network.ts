import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { setTimeout as sleep } from 'node:timers/promises';
import { startCapture } from './netns/capture.js';
import { WITNESS_FILTER } from './netns/packet-witness.js';
import type { Packet } from './netns/packet.js';
import type { LabTraffic } from './lab-session.js';
import { WitnessLedger, type WitnessProof } from './witness-ledger.js';

const MAX_PACKETS = 20_000;
const PROOF_TIMEOUT_MS = 3000;

export interface LiveNetworkWitness {
  /** Proof of life: one marked UDP datagram to 127.0.0.1 (loopback only), seen by the capture; pcap drop counters read. */
  proveWitness(): Promise<WitnessProof>;
  trafficBetween(fromMs: number, toMs?: number): LabTraffic;
  close(): Promise<void>;
}

/**
 * --live-network: no lab. Probes try the real addresses from wherever the backend puts its boxes,
 * and a packet witness on the machine's own interfaces records what left. Only for a disposable
 * cloud machine whose real metadata service and network the user means to test; never in our tests.
 * There is no decoy log here, so DNS is seen only as far as the capture decodes it.
 */
export async function openLiveNetwork(): Promise<LiveNetworkWitness> {
  const capture = await startCapture({ filter: WITNESS_FILTER, maxPackets: MAX_PACKETS, keep: 'latest' });
  const ledger = new WitnessLedger('live');
  const proofPorts = new Set<number>();
  const isProof = (p: Packet): boolean => p.dst === '127.0.0.1' && p.dstPort !== undefined && proofPorts.has(p.dstPort);
  const baseline = await capture.requestStats();
  if (baseline !== undefined) ledger.sample(Date.now(), baseline.droppedByKernel + baseline.droppedByInterface);

  const proveWitness = async (): Promise<WitnessProof> => {
    const port = 20_000 + (randomBytes(2).readUInt16BE(0) % 40_000);
    const marker = `sandcheck-witness-${randomBytes(8).toString('hex')} to 127.0.0.1:${port}`;
    proofPorts.add(port);
    const sentMs = Date.now();
    const notes: string[] = [];
    const socket = createSocket('udp4');
    try {
      await new Promise<void>((resolve, reject) => socket.send(marker, port, '127.0.0.1', (err) => (err ? reject(err) : resolve())));
    } catch (err) {
      notes.push(`the proof datagram could not be sent: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      socket.close();
    }
    const seen = (): boolean => capture.packets().some((p) => p.time >= sentMs - 5 && p.dstPort === port && p.dst === '127.0.0.1');
    while (notes.length === 0 && !seen() && Date.now() < sentMs + PROOF_TIMEOUT_MS) await sleep(20);
    if (notes.length === 0 && !seen()) notes.push(`the packet capture did not record the proof datagram within ${PROOF_TIMEOUT_MS} ms`);
    const stats = await capture.requestStats();
    if (stats === undefined) notes.push('tcpdump did not report its pcap statistics');
    const doneMs = Date.now();
    if (stats !== undefined) ledger.sample(doneMs, stats.droppedByKernel + stats.droppedByInterface);
    const proof: WitnessProof = { marker, sentMs, doneMs, ok: notes.length === 0, notes };
    ledger.proof(proof);
    return proof;
  };

  return {
    proveWitness,
    trafficBetween: (fromMs, endMs) => {
      const toMs = endMs ?? Date.now();
      return {
        events: [],
        packets: capture.packets().filter((p) => p.time >= fromMs && p.time <= toMs && !isProof(p)),
        witness: ledger.health(fromMs, toMs, [{ store: 'packet capture', ms: capture.stats().lastEvictedMs }]),
      };
    },
    async close() {
      await capture.stop();
    },
  };
}
