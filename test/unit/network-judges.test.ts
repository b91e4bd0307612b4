import { describe, expect, it } from 'vitest';
import { CI_POLICY, type Policy } from '../../model/policy.js';
import type { DecoyEvent } from '../../lab/decoys/decoy-log.js';
import type { WitnessHealth } from '../../lab/witness-health.js';
import { dnsExfil } from '../../probes/dns-exfil/probe.js';
import { icmpPing } from '../../probes/icmp-ping/probe.js';
import { metadataIpv4 } from '../../probes/metadata-ipv4/probe.js';
import { publicEgressIpv4 } from '../../probes/public-egress-ipv4/probe.js';
import { udpEgress } from '../../probes/udp-egress/probe.js';
import { ctx, obs, packet, seeing } from '../helpers/network-obs.js';

const dnsEvent = (name: string): DecoyEvent => ({
  time: new Date().toISOString(),
  service: 'dns',
  proto: 'udp',
  local: { address: '0.0.0.0', port: 53 },
  peer: { address: '192.0.2.53', port: 40000 },
  summary: `A? ${name}.`,
  payloadBase64: '',
  dnsNames: [name],
});

describe('network judges: a witness that cannot see never says held', () => {
  const quietCases: [string, WitnessHealth, RegExp][] = [
    ['saturated', { ...seeing, saturated: true, notes: ['the decoy log was full'] }, /saturated/],
    ['dropping', { ...seeing, dropped: 17 }, /17 packets or datagrams were dropped/],
    ['without proof of life', { ...seeing, proofOfLife: false, notes: ['no proof of life was sent in this window'] }, /no proof of life/],
  ];
  for (const [what, witness, reason] of quietCases) {
    it(`a quiet window whose witness was ${what} is inconclusive, for every network probe`, () => {
      for (const probe of [metadataIpv4, publicEgressIpv4, udpEgress, icmpPing, dnsExfil]) {
        const j = probe.judge(obs({ witness }), ctx());
        expect(j.verdict, probe.id).toBe('inconclusive');
        expect(j.reason, probe.id).toMatch(reason);
      }
      // The same quiet window with a witness that can see is held: the test above can fail.
      expect(metadataIpv4.judge(obs({}), ctx()).verdict).toBe('held');
    });
  }

  it('what a saturated witness did record still counts as a crossing', () => {
    const j = metadataIpv4.judge(obs({ packets: [packet('tcp', '169.254.169.254', 80)], witness: { ...seeing, saturated: true } }), ctx());
    expect(j.verdict).toBe('crossed');
  });

  it('dns-exfil under --live-network: a query seen by the capture is crossed, silence is inconclusive (no resolver log)', () => {
    const live: WitnessHealth = { ...seeing, scope: 'live' };
    const silent = dnsExfil.judge(obs({ witness: live }), ctx());
    expect(silent.verdict).toBe('inconclusive');
    expect(silent.reason).toMatch(/live-network/);
    const seen = packet('udp', '10.0.0.2', 53);
    const j = dnsExfil.judge(obs({ witness: live, packets: [{ ...seen, raw: `${seen.raw} 23130+ A? scabcd1234.x.exfil.example. (40)` }] }), ctx());
    expect(j.verdict).toBe('crossed');
  });

  it('dns-exfil in the lab reads the question names the resolver logged', () => {
    expect(dnsExfil.judge(obs({ events: [dnsEvent('scabcd1234.x.exfil.example')] }), ctx()).verdict).toBe('crossed');
    expect(dnsExfil.judge(obs({ events: [dnsEvent('unrelated.example')] }), ctx()).verdict).toBe('held');
  });
});

describe('network judges: allowlist entries carry a protocol', () => {
  const web: Policy = { ...CI_POLICY, network: { mode: 'allowlist', allow: ['203.0.113.10:80'] } };
  const pingable: Policy = { ...CI_POLICY, network: { mode: 'allowlist', allow: ['icmp:203.0.113.10'] } };

  it('an ICMP echo that reached an address allowed only for tcp/80 is crossed', () => {
    const j = icmpPing.judge(obs({ packets: [packet('icmp', '203.0.113.10')] }), ctx(web));
    expect(j.verdict, j.reason).toBe('crossed');
  });

  it('a blocked ICMP echo under a tcp/80 allowlist is held, not a failed positive control', () => {
    const j = icmpPing.judge(obs({}), ctx(web));
    expect(j.verdict, j.reason).toBe('held');
  });

  it('an allowed ICMP echo that never arrived is a failed positive control; one that arrived is held', () => {
    expect(icmpPing.judge(obs({}), ctx(pingable)).reason).toMatch(/positive control failed/);
    expect(icmpPing.judge(obs({ packets: [packet('icmp', '203.0.113.10')] }), ctx(pingable)).verdict).toBe('held');
  });

  it('a DNS question is allowed only over the protocol the resolver entry names', () => {
    const udpDns: Policy = { ...CI_POLICY, network: { mode: 'allowlist', allow: ['udp:192.0.2.53:53'] } };
    const overUdp = dnsEvent('scabcd1234.x.exfil.example');
    expect(dnsExfil.judge(obs({ events: [overUdp] }), ctx(udpDns)).verdict).toBe('held');
    expect(dnsExfil.judge(obs({ events: [{ ...overUdp, proto: 'tcp' }] }), ctx(udpDns)).verdict).toBe('crossed');
  });

  it('a UDP datagram to a tcp-only allowed address and port is crossed', () => {
    const tcp123: Policy = { ...CI_POLICY, network: { mode: 'allowlist', allow: ['tcp:203.0.113.10:123'] } };
    expect(udpEgress.judge(obs({ packets: [packet('udp', '203.0.113.10', 123)] }), ctx(tcp123)).verdict).toBe('crossed');
  });
});

describe('network judges: a box whose traffic never passed the lab', () => {
  const saying = (text: string) => {
    const o = obs({});
    const head = Buffer.from(text).toString('base64');
    return { ...o, exec: { ...o.exec, stdout: { ...o.exec.stdout, bytes: text.length, headBase64: head, preview: text } } };
  };
  it('a payload reporting an answer (connected, a reply) with no contact in the lab is inconclusive, never held', () => {
    for (const [probe, line] of [
      [metadataIpv4, 'IMDSv1 role list: connected 412 bytes sha256:0 decoys:none\n'],
      [udpEgress, '203.0.113.10:123 udp: sent, reply 48 bytes\n'],
      [icmpPing, 'ping 203.0.113.10: echo sent (raw), reply received\n'],
    ] as const) {
      const j = probe.judge(saying(line), ctx());
      expect(`${probe.id}: ${j.verdict}: ${j.reason}`).toMatch(new RegExp(`^${probe.id}: inconclusive: the payload reports an answer`));
    }
    // Refusals and silence leave the lab's quiet as it was: held.
    expect(metadataIpv4.judge(saying('IMDSv1 role list: error: Network is unreachable (ENETUNREACH) 0 bytes\n'), ctx()).verdict).toBe('held');
    expect(udpEgress.judge(saying('203.0.113.10:123 udp: sent, no reply\n'), ctx()).verdict).toBe('held');
  });
});
