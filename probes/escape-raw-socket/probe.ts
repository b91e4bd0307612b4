import { createHash } from 'node:crypto';
import { exitEvidence } from '../../model/judge.js';
import { outside } from '../../model/evidence.js';
import type { Judgement, Observation, SecurityProbe } from '../../model/probe.js';
import { witnessBlindness } from '../../lab/witness-health.js';
import { judgeEscape, type EscapeSpec, type EscapeStep } from '../_shared/escapes.js';

const TARGET = { address: '203.0.113.10', port: 9 };

/** This execution's forged sources: documentation addresses no lab interface has, chosen from the nonce. */
export function forgedSources(nonce: string): { raw: { src: string; port: number }; packet: { src: string; port: number }; controlPort: number } {
  const h = createHash('sha256').update(`forged:${nonce}`).digest();
  const host = 20 + ((h[0] ?? 0) % 200);
  const port = 20_000 + (h.readUInt16BE(1) % 20_000);
  return { raw: { src: `198.51.100.${host}`, port }, packet: { src: `198.51.100.${host + 1}`, port: port + 1 }, controlPort: port + 2 };
}

/** The box's own unforged datagram refused for want of a route: the box has no path to the lab at all. */
const NO_ROUTE = new Set(['ENETUNREACH', 'EHOSTUNREACH', 'ENETDOWN']);

/**
 * A forged datagram sent (`ok`) that the lab never saw was stopped on its way only if the box's own unforged
 * datagram, from this execution's control port, reached the witness (the path dropped forged sources), or was itself
 * refused for want of a route (a packet on the box's own loopback that goes nowhere). Otherwise the box's packets
 * may go where the witness cannot see.
 */
function controlSeen(obs: Observation, nonce: string, steps: readonly EscapeStep[]): ReturnType<NonNullable<EscapeSpec['okUnseen']>> {
  const port = forgedSources(nonce).controlPort;
  const hit = (obs.network?.packets ?? []).find((p) => p.proto === 'udp' && p.dst === TARGET.address && p.dstPort === TARGET.port && p.srcPort === port);
  if (hit)
    return {
      explained: true,
      evidence: [outside('packet-witness', `control: ${hit.raw.slice(0, 200)}`, `lab ${hit.iface ?? 'any'}`)],
      stoppedBy: `the unforged control datagram (from ${hit.src}) reached the lab, so the path dropped forged sources`,
    };
  const control = steps.find((s) => s.step === 'control');
  if (control && NO_ROUTE.has(control.outcome)) {
    return { explained: true, evidence: [], stoppedBy: `the box has no route to the lab (its unforged control datagram: ${control.outcome})` };
  }
  return {
    explained: false,
    reason: `the lab saw no unforged control datagram from this execution (udp port ${port} → ${TARGET.address}:${TARGET.port}; the payload says ${control?.outcome ?? 'nothing'}), so the box's packets may never reach its witness`,
  };
}

/** A packet the lab's witness recorded with this execution's forged source address and port. */
function forgedSeen(obs: Observation, nonce: string): Judgement | undefined {
  const f = forgedSources(nonce);
  const hits = (obs.network?.packets ?? []).filter((p) => p.dst === TARGET.address && [f.raw, f.packet].some((s) => p.src === s.src && p.srcPort === s.port));
  if (hits.length === 0) return undefined;
  return {
    verdict: 'crossed',
    reason: `forged packets reached the lab: the witness saw ${[...new Set(hits.map((p) => `${p.src}:${p.srcPort}`))].join(', ')} → ${TARGET.address}:${TARGET.port}, a source no interface has`,
    evidence: [...hits.slice(0, 3).map((p) => outside('packet-witness', p.raw.slice(0, 200), `lab ${p.iface ?? 'any'}`)), exitEvidence(obs.exec)],
  };
}

/**
 * EPERM: no CAP_NET_RAW; ENETUNREACH/EHOSTUNREACH/ENODEV/ENETDOWN: no route or (up) link to the lab (the box's own
 * network); EAFNOSUPPORT/EPROTONOSUPPORT/ESOCKTNOSUPPORT: the box's kernel offers no such socket. A
 * datagram sent that never reached the lab is no crossing: the witness decides.
 */
const REFUSALS = new Set([
  'EPERM',
  'EACCES',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'ENODEV',
  'ENETDOWN',
  'EAFNOSUPPORT',
  'EPROTONOSUPPORT',
  'ESOCKTNOSUPPORT',
  'ENOSYS',
  'no-af-packet',
]);

export const escapeRawSocket: SecurityProbe = {
  kind: 'security',
  id: 'escape-raw-socket',
  title: 'forge source addresses with raw and packet sockets towards a lab decoy',
  category: 'network',
  policyItem: 'network.egress',
  severity: 'high',
  payload: 'escape-raw-socket',
  remediation: 'Drop CAP_NET_RAW (docker grants it by default) and keep the box off any network it must not reach.',
  attack: ['T1095', 'T1599'],
  cwe: ['CWE-250', 'CWE-290'],
  args: (ctx) => {
    const f = forgedSources(ctx.nonce);
    return {
      target: TARGET.address,
      port: TARGET.port,
      rawSrc: f.raw.src,
      rawPort: f.raw.port,
      packetSrc: f.packet.src,
      packetPort: f.packet.port,
      controlPort: f.controlPort,
    };
  },
  judge: (obs, ctx) =>
    judgeEscape(obs, {
      what: 'send forged packets to a lab decoy',
      decisive: ['raw-ip', 'packet'],
      refusals: REFUSALS,
      control: 'no CAP_NET_RAW or no route to the lab',
      okUnseen: (o, steps) => controlSeen(o, ctx.nonce, steps),
      outsideCrossing: (o) => forgedSeen(o, ctx.nonce),
      blind: (o) => (o.network ? witnessBlindness(o.network.witness) : 'no lab traffic was recorded for this probe'),
      quiet: (o) => [
        outside(
          'packet-witness',
          `${o.network?.packets.length ?? 0} packets in the lab while it ran, none from this execution's forged sources; proof of life ${o.network?.witness.proofOfLife ?? false}`,
          'lab',
        ),
      ],
    }),
};
