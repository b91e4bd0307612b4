import { canaryCrossing, exitEvidence, payloadReport, unlessAttempted } from '../../harness/judge.js';
import { outside, type Evidence } from '../../harness/model/evidence.js';
import type { Judgement, Observation, ProbeContext } from '../../harness/model/probe.js';
import { canonicalAddress, isAllowed } from '../../harness/network-allow.js';

export interface NetTarget {
  address: string;
  port?: number;
  proto: 'tcp' | 'udp' | 'icmp';
}

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

/** DNS questions the lab resolver logged whose name contains `label`. */
export function dnsQueries(obs: Observation, label: string): Evidence[] {
  return (obs.network?.events ?? [])
    .filter((e) => e.service === 'dns' && e.summary.toLowerCase().includes(label.toLowerCase()))
    .slice(0, 5)
    .map((e) => outside('decoy:dns', e.summary, `${e.local.address}:${e.local.port}`));
}

/**
 * Verdict from the lab only: a contact with a target the policy does not allow is a crossing; an
 * allowed target that was not reached is a failed positive control (inconclusive, never held).
 */
export function judgeNetwork(obs: Observation, ctx: ProbeContext, targets: readonly NetTarget[], extra: { dnsLabels?: readonly string[] } = {}): Judgement {
  const leaked = canaryCrossing(obs);
  if (!obs.network) return leaked ?? { verdict: 'inconclusive', reason: 'no lab traffic was recorded for this probe', evidence: [exitEvidence(obs.exec)] };
  const crossings: string[] = [];
  const missingControls: string[] = [];
  const evidence: Evidence[] = [];
  for (const t of targets) {
    const seen = contactEvidence(obs, t);
    evidence.push(...seen);
    const allowed = isAllowed(ctx.policy, t.address, t.port);
    if (seen.length > 0 && !allowed) crossings.push(describe(t));
    if (seen.length === 0 && allowed) missingControls.push(describe(t));
  }
  for (const label of extra.dnsLabels ?? []) {
    const queries = dnsQueries(obs, label);
    evidence.push(...queries);
    if (queries.length > 0 && !isAllowed(ctx.policy, '192.0.2.53', 53)) crossings.push(`a DNS query carrying ${label.length > 24 ? `${label.slice(0, 24)}…` : label}`);
  }
  const context = [...evidence, exitEvidence(obs.exec), payloadReport(obs.exec)];
  if (leaked) return { ...leaked, reason: `${leaked.reason}${crossings.length > 0 ? `; reached ${crossings.join(', ')}` : ''}`, evidence: [...leaked.evidence.filter((e) => e.source === 'outside'), ...context] };
  if (crossings.length > 0) return { verdict: 'crossed', reason: `reached from the box: ${crossings.join(', ')}`, evidence: context };
  const notRun = unlessAttempted(obs, true);
  if (notRun) return notRun;
  if (missingControls.length > 0) {
    return { verdict: 'inconclusive', reason: `positive control failed: the allowed ${missingControls.join(', ')} was not reached, so the backend's network is broken rather than filtered`, evidence: context };
  }
  const quiet = outside('packet-witness', `${obs.network.packets.length} packets and ${obs.network.events.length} decoy contacts in the lab while it ran; none to a forbidden target`, 'lab');
  const what = [...targets.map(describe), ...(extra.dnsLabels?.length ? ['the lab resolver with the marked name'] : [])].join(', ');
  return { verdict: 'held', reason: `nothing reached ${what} from the box`, evidence: [quiet, ...context] };
}
