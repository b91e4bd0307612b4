import { canaryCrossing, exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { outside, type Evidence } from '../../model/evidence.js';
import type { Policy } from '../../model/policy.js';
import type { Judgement, Observation, ProbeContext, SecurityProbe } from '../../model/probe.js';
import { allowRules, canonicalAddress, isAllowed } from '../../model/network-allow.js';
import { ALLOWLIST_NAMES, CANARY_TCP_PORTS, DENIED_NAME_SUFFIX } from '../../lab/decoys/lab-names.js';
import type { DecoyEvent } from '../../lab/decoys/decoy-log.js';
import { LAB_ALLOWED_HOST, LAB_FRONT, LAB_RESOLVER } from '../../lab/netns/addresses.js';
import type { Packet } from '../../lab/netns/packet.js';
import { witnessBlindness } from '../../lab/witness-health.js';

/**
 * The allowlist probes (issue #17): classic ways past a network allowlist. Every attempt carries this execution's
 * marker (`sc<nonce>-<attempt>`) in what a decoy logs (an HTTP path, a Host header, a TLS SNI, a DNS name), so a
 * decoy's log line names the execution and the attempt. Judged from outside only: a marked contact at a destination
 * the policy does not allow is a crossing; a marked contact at an allowed one is the positive control.
 */

export const NO_ALLOWLIST =
  'the policy has no network allowlist (network.mode off): these probes test what an allowlist lets through; the other network probes cover a network that is off';

/** Not-applicable without an allowlist to bypass. */
export function allowlistPrecondition(ctx: ProbeContext): string | undefined {
  return ctx.policy.network.mode === 'allowlist' && ctx.policy.network.allow.length > 0 ? undefined : NO_ALLOWLIST;
}

export const marker = (ctx: ProbeContext): string => `sc${ctx.nonce}`;

/** The allowed destination the payloads mark as their positive control: the first tcp (or bare) entry on a port a lab canary answers. */
export function controlTarget(policy: Policy): { address: string; port: number; name?: string } | undefined {
  for (const rule of allowRules(policy)) {
    if ((rule.proto !== 'tcp' && rule.proto !== 'all') || rule.family !== 4) continue;
    const port = rule.port ?? 80;
    if (!(CANARY_TCP_PORTS as readonly number[]).includes(port)) continue;
    const octets = rule.address.split('.').map(Number);
    // A prefix: its tenth address (every address answers inside the lab).
    if (rule.prefix <= 28) octets[3] = (octets[3] ?? 0) + 10;
    const address = octets.join('.');
    return { address, port, ...(address === LAB_ALLOWED_HOST ? { name: ALLOWLIST_NAMES.control } : {}) };
  }
  return undefined;
}

/** What every allowlist payload gets: its marker, the allowed control, the lab's names, front, resolver. */
export function allowlistArgs(ctx: ProbeContext): Record<string, unknown> {
  return {
    marker: marker(ctx),
    control: controlTarget(ctx.policy) ?? null,
    names: ALLOWLIST_NAMES,
    deniedSuffix: DENIED_NAME_SUFFIX,
    front: LAB_FRONT,
    resolver: LAB_RESOLVER,
  };
}

const lower = (s: string): string => s.toLowerCase();

function eventCarries(e: DecoyEvent, mark: string): boolean {
  const payload = Buffer.from(e.payloadBase64, 'base64').toString('latin1');
  return [payload, e.summary, ...(e.dnsNames ?? []), ...Object.values(e.detail ?? {})].some((t) => lower(t).includes(mark));
}

interface Contact {
  proto: 'tcp' | 'udp';
  address: string;
  port: number;
  /** For the report: who saw it and what. */
  evidence: Evidence;
  marked: boolean;
  metadata: boolean;
}

const hostPort = (address: string, port: number): string => (address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`);

/** Contacts the lab saw in the window: decoy log lines (known dialled address) and DNS datagrams from the capture. */
function contacts(obs: Observation, mark: string): Contact[] {
  const net = obs.network;
  if (!net) return [];
  const fromEvents = net.events
    // A wildcard UDP listener cannot tell the dialled address: the capture's datagrams stand for those.
    .filter((e) => !(e.proto === 'udp' && e.detail?.['localAddressKnown'] === 'false'))
    .map((e): Contact => {
      const address = canonicalAddress(e.detail?.['localIPv4'] ?? e.local.address);
      return {
        proto: e.proto,
        address,
        port: e.local.port,
        evidence: outside(`decoy:${e.service}`, `${e.summary} from ${e.peer.address}`, hostPort(address, e.local.port)),
        marked: eventCarries(e, mark),
        metadata: e.service === 'metadata',
      };
    });
  const fromPackets = net.packets
    .filter((p: Packet) => p.proto === 'udp' && p.dstPort === 53 && lower(p.raw).includes(mark))
    .map((p): Contact => ({
      proto: 'udp',
      address: canonicalAddress(p.dst),
      port: 53,
      evidence: outside('packet-witness', p.raw.slice(0, 200), `lab ${p.iface ?? 'any'}`),
      marked: true,
      metadata: false,
    }));
  return [...fromEvents, ...fromPackets];
}

/**
 * Crossed: a marked contact (or any contact with a metadata decoy) at a destination the policy does not allow, seen
 * by a decoy or the capture. Held: none, the payload answered its challenge at start and end, the witnesses showed
 * proof of life, and a marked contact reached an allowed destination (the allowed path works). Otherwise inconclusive.
 */
export function judgeAllowlist(obs: Observation, ctx: ProbeContext): Judgement {
  const leaked = canaryCrossing(obs);
  if (!obs.network) return leaked ?? { verdict: 'inconclusive', reason: 'no lab traffic was recorded for this probe', evidence: [exitEvidence(obs.exec)] };
  const mark = marker(ctx);
  const seen = contacts(obs, mark);
  const allowed = (c: Contact): boolean => isAllowed(ctx.policy, { proto: c.proto, address: c.address, port: c.port });
  const crossings = seen.filter((c) => (c.marked || c.metadata) && !allowed(c));
  const controls = seen.filter((c) => c.marked && allowed(c));
  const { witness } = obs.network;
  const health = outside(
    'witness-health',
    `saturated ${witness.saturated}, dropped ${witness.dropped}, proof of life ${witness.proofOfLife}, scope ${witness.scope}${witness.notes.length > 0 ? `: ${witness.notes.join('; ')}` : ''}`,
    witness.scope === 'live' ? 'host' : 'lab',
  );
  const context = [
    ...crossings.slice(0, 8).map((c) => c.evidence),
    ...controls.slice(0, 2).map((c) => c.evidence),
    health,
    exitEvidence(obs.exec),
    payloadReport(obs.exec),
  ];
  const reached = [...new Set(crossings.map((c) => `${c.proto} ${hostPort(c.address, c.port)}`))];
  if (leaked) return { ...leaked, evidence: [...leaked.evidence.filter((e) => e.source === 'outside'), ...context] };
  if (crossings.length > 0)
    return { verdict: 'crossed', reason: `marked requests reached ${reached.join(', ')}, which the allowlist does not allow`, evidence: context };
  const notRun = unlessAttempted(obs, true);
  if (notRun) return notRun;
  if (witness.scope === 'live')
    return {
      verdict: 'inconclusive',
      reason: 'the allowlist probes need the lab: under --live-network no decoy answers the names and addresses they use',
      evidence: context,
    };
  const blind = witnessBlindness(witness);
  if (blind !== undefined) return { verdict: 'inconclusive', reason: `the network witnesses could not see this window: ${blind}`, evidence: context };
  if (controls.length === 0) {
    const control = controlTarget(ctx.policy);
    return {
      verdict: 'inconclusive',
      reason: `positive control failed: no marked request reached an allowed destination (${control ? `tcp ${hostPort(control.address, control.port)}` : 'the allowlist has no tcp entry on a port a lab canary answers: 80, 443, 8080, 22'}), so silence proves nothing`,
      evidence: context,
    };
  }
  const quiet = outside(
    'decoy-log',
    `${obs.network.events.length} decoy contacts and ${obs.network.packets.length} packets in the lab while it ran; marked contacts only at allowed destinations`,
    'lab',
  );
  return {
    verdict: 'held',
    reason: 'nothing marked reached a destination the allowlist does not allow; the marked control reached the allowed one',
    evidence: [quiet, ...context],
  };
}

/** One allowlist probe: payload folder = id, not-applicable without an allowlist, judged by `judgeAllowlist`. */
export function allowlistProbe(
  threat: Pick<SecurityProbe, 'id' | 'severity' | 'attack' | 'cwe'>,
  text: Pick<SecurityProbe, 'title' | 'remediation'>,
): SecurityProbe {
  return {
    kind: 'security',
    optIn: true,
    category: 'network',
    policyItem: 'network.egress',
    payload: threat.id,
    ...threat,
    ...text,
    hostPrecondition: allowlistPrecondition,
    args: allowlistArgs,
    judge: (obs, ctx) => judgeAllowlist(obs, ctx),
  };
}
