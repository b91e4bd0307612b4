import type { SecurityProbe } from '../../model/probe.js';
import { judgeNetwork, type NetTarget } from '../_shared/network.js';

const TARGETS: NetTarget[] = [
  { address: '203.0.113.10', port: 123, proto: 'udp' },
  { address: '2001:db8::10', port: 9, proto: 'udp' },
];

export const udpEgress: SecurityProbe = {
  kind: 'security',
  id: 'udp-egress',
  title: 'UDP datagrams to public addresses',
  category: 'network',
  policyItem: 'network.egress',
  severity: 'high',
  payload: 'udp-egress',
  remediation: 'Egress rules must cover UDP, not only TCP connections.',
  attack: ['T1048', 'T1095'],
  cwe: ['CWE-284'],
  args: () => ({ targets: TARGETS.map(({ address, port }) => ({ address, port })) }),
  judge: (obs, ctx) => judgeNetwork(obs, ctx, TARGETS),
};
