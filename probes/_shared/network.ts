import { canaryCrossing, exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { outside, type Evidence } from '../../model/evidence.js';
import type { Judgement, Observation, ProbeContext } from '../../model/probe.js';
import { canonicalAddress, isAllowed, type NetworkTargetSpec } from '../../model/network-allow.js';
import { LAB_RESOLVER } from '../../lab/netns/addresses.js';
import { witnessBlindness } from '../../lab/witness-health.js';
import { outputText } from './exposure-judges.js';

export type NetTarget = NetworkTargetSpec;

const describe = (t: NetTarget): string => `${t.proto} ${t.address.includes(':') ? `[${t.address}]` : t.address}${t.port !== undefined ? `:${t.port}` : ''}`;

/** Outside evidence that the box reached `t`: a packet the witness recorded or a decoy that logged a contact. */
function contactEvidence(obs: Observation, t: NetTarget): Evidence[] {
  const net = obs.network;
  if (!net) return [];
  const addr = canonicalAddress(t.address);
  const packets = net.packets.filter(
    (p) =>
      canonicalAddress(p.dst) === addr &&
      (t.port === undefined || p.dstPort === t.port) &&
      (t.proto === 'icmp' ? p.proto === 'icmp' || p.proto === 'icmp6' : p.proto === t.proto),
  );
  const events = net.events.filter((e) => {
    const local = canonicalAddress(e.detail?.['localIPv4'] ?? e.local.address);
    return local === addr && e.proto === t.proto && (t.port === undefined || e.local.port === t.port);
  });
  return [
    ...packets.slice(0, 3).map((p) => outside('packet-witness', p.raw.slice(0, 200), `lab ${p.iface ?? 'any'}`)),
    ...events.slice(0, 3).map((e) => outside(`decoy:${e.service}`, `${e.summary} from ${e.peer.address}`, `${e.local.address}:${e.local.port}`)),
  ];
}

const carries = (name: string, label: string): boolean => name.toLowerCase().includes(label.toLowerCase());

/** DNS questions carrying `label`: logged by the lab resolver, or (live network) decoded by the packet capture. */
function dnsQuestions(obs: Observation, label: string): { evidence: Evidence; proto: 'tcp' | 'udp' }[] {
  const net = obs.network;
  if (!net) return [];
  const logged = net.events
    .filter((e) => e.service === 'dns' && (e.dnsNames ?? [e.summary]).some((n) => carries(n, label)))
    .map((e) => ({ evidence: outside('decoy:dns', e.summary, `${e.local.address}:${e.local.port}`), proto: e.proto }));
  const seen = net.packets
    .filter(
      (p): p is typeof p & { proto: 'tcp' | 'udp' } =>
        (p.proto === 'udp' || p.proto === 'tcp') && (p.dstPort === 53 || p.dstPort === 5353) && carries(p.raw, label),
    )
    .map((p) => ({
      evidence: outside('packet-witness', p.raw.slice(0, 200), `${net.witness.scope === 'live' ? 'host' : 'lab'} ${p.iface ?? 'any'}`),
      proto: p.proto,
    }));
  return [...logged, ...seen].slice(0, 5);
}

/** A line of the payload's output saying a peer answered (a stream connected, a datagram or echo replied); inside evidence. */
function answeredLine(obs: Observation): string | undefined {
  return outputText(obs)
    .split('\n')
    .find((l) => /: connected\b|\bsent, reply \d+ bytes|\breply received\b/.test(l));
}

/**
 * Verdict from the witnesses only: a contact with a target the policy does not allow is a crossing; an
 * allowed target that was not reached is a failed positive control (inconclusive, never held); and a
 * window whose witnesses were saturated, dropped data or showed no proof of life is inconclusive.
 */
export function judgeNetwork(
  obs: Observation,
  ctx: ProbeContext,
  targets: readonly NetTarget[],
  extra: { dnsLabels?: readonly string[]; labWitnessDecides?: boolean } = {},
): Judgement {
  const leaked = canaryCrossing(obs);
  if (!obs.network) return leaked ?? { verdict: 'inconclusive', reason: 'no lab traffic was recorded for this probe', evidence: [exitEvidence(obs.exec)] };
  const { witness } = obs.network;
  const crossings: string[] = [];
  const missingControls: string[] = [];
  const evidence: Evidence[] = [];
  for (const t of targets) {
    const seen = contactEvidence(obs, t);
    evidence.push(...seen);
    const allowed = isAllowed(ctx.policy, t);
    if (seen.length > 0 && !allowed) crossings.push(describe(t));
    if (seen.length === 0 && allowed) missingControls.push(describe(t));
  }
  const labels = extra.dnsLabels ?? [];
  for (const label of labels) {
    const queries = dnsQuestions(obs, label);
    evidence.push(...queries.map((q) => q.evidence));
    // A question over a protocol the policy allows to the lab resolver is the allowed path, not a crossing.
    if (queries.some((q) => !isAllowed(ctx.policy, { proto: q.proto, address: LAB_RESOLVER, port: 53 }))) {
      crossings.push(`a DNS query carrying ${label.length > 24 ? `${label.slice(0, 24)}…` : label}`);
    }
  }
  const health = outside(
    'witness-health',
    `saturated ${witness.saturated}, dropped ${witness.dropped}, proof of life ${witness.proofOfLife}, scope ${witness.scope}${witness.notes.length > 0 ? `: ${witness.notes.join('; ')}` : ''}`,
    witness.scope === 'live' ? 'host' : 'lab',
  );
  const context = [...evidence, health, exitEvidence(obs.exec), payloadReport(obs.exec)];
  // What a witness did record stands even when it later lost data: a crossing needs one contact, not all of them.
  if (leaked)
    return {
      ...leaked,
      reason: `${leaked.reason}${crossings.length > 0 ? `; reached ${crossings.join(', ')}` : ''}`,
      evidence: [...leaked.evidence.filter((e) => e.source === 'outside'), ...context],
    };
  if (crossings.length > 0) return { verdict: 'crossed', reason: `reached from the box: ${crossings.join(', ')}`, evidence: context };
  const notRun = unlessAttempted(obs, true);
  if (notRun) return notRun;
  const blind = extra.labWitnessDecides === false ? undefined : witnessBlindness(witness);
  if (blind !== undefined) return { verdict: 'inconclusive', reason: `the network witnesses could not see this window: ${blind}`, evidence: context };
  if (labels.length > 0 && witness.scope === 'live') {
    return {
      verdict: 'inconclusive',
      reason:
        'under --live-network no witness sees every DNS path (the real resolver, DNS over TCP or HTTPS, a resolver outside this machine): a marked query absent from the packet capture proves nothing',
      evidence: context,
    };
  }
  if (missingControls.length > 0) {
    return {
      verdict: 'inconclusive',
      reason: `positive control failed: the allowed ${missingControls.join(', ')} was not reached, so the backend's network is broken rather than filtered`,
      evidence: context,
    };
  }
  // The box's own word that something answered it, while no witness saw a single contact: its traffic went
  // somewhere the lab cannot see (a network of the backend's own, a misrouted box), so the lab's quiet proves nothing.
  const answered = evidence.length === 0 ? answeredLine(obs) : undefined;
  if (answered !== undefined) {
    return {
      verdict: 'inconclusive',
      reason: `the payload reports an answer (${JSON.stringify(answered.slice(0, 160))}), yet no witness of the lab saw any contact: its traffic did not pass the lab, so the lab's quiet proves nothing`,
      evidence: context,
    };
  }
  const quiet = outside(
    'packet-witness',
    `${obs.network.packets.length} packets and ${obs.network.events.length} decoy contacts in the lab while it ran; none to a forbidden target`,
    'lab',
  );
  const what = [...targets.map(describe), ...(labels.length > 0 ? ['the lab resolver with the marked name'] : [])].join(', ');
  return { verdict: 'held', reason: `nothing reached ${what} from the box`, evidence: [quiet, ...context] };
}
