/** TCP egress to the documentation ranges, IPv4 and IPv6: one payload (public-egress-ipv4's), one judge. */
import type { SecurityProbe } from '../../model/probe.js';
import { judgeNetwork, type NetTarget } from './network.js';

export const V4: (NetTarget & { http?: boolean })[] = [
  { address: '203.0.113.10', port: 80, proto: 'tcp', http: true },
  { address: '198.51.100.10', port: 443, proto: 'tcp' },
  { address: '203.0.113.77', port: 22, proto: 'tcp' },
];
export const V6: (NetTarget & { http?: boolean })[] = [
  { address: '2001:db8::10', port: 80, proto: 'tcp', http: true },
  { address: '2001:db8::77', port: 443, proto: 'tcp' },
];

export const egress = (id: string, title: string, targets: typeof V4, remediation: string): SecurityProbe => ({
  kind: 'security',
  id,
  title,
  category: 'network',
  policyItem: 'network.egress',
  severity: 'high',
  payload: 'public-egress-ipv4',
  remediation,
  attack: ['T1071.001', 'T1041'],
  cwe: ['CWE-284'],
  args: () => ({ targets: targets.map(({ address, port, http }) => ({ address, port, http: http ?? false })) }),
  judge: (obs, ctx) => judgeNetwork(obs, ctx, targets),
});
