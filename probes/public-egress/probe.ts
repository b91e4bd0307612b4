import type { SecurityProbe } from '../../model/probe.js';
import { judgeNetwork, type NetTarget } from '../_shared/network.js';

const V4: (NetTarget & { http?: boolean })[] = [
  { address: '203.0.113.10', port: 80, proto: 'tcp', http: true },
  { address: '198.51.100.10', port: 443, proto: 'tcp' },
  { address: '203.0.113.77', port: 22, proto: 'tcp' },
];
const V6: (NetTarget & { http?: boolean })[] = [
  { address: '2001:db8::10', port: 80, proto: 'tcp', http: true },
  { address: '2001:db8::77', port: 443, proto: 'tcp' },
];

const egress = (id: string, title: string, targets: typeof V4, remediation: string): SecurityProbe => ({
  kind: 'security',
  id,
  title,
  category: 'network',
  policyItem: 'network.egress',
  severity: 'high',
  payload: 'public-egress',
  remediation,
  attack: ['T1071.001', 'T1041'],
  cwe: ['CWE-284'],
  args: () => ({ targets: targets.map(({ address, port, http }) => ({ address, port, http: http ?? false })) }),
  judge: (obs, ctx) => judgeNetwork(obs, ctx, targets),
});

export const publicEgressIpv4 = egress(
  'public-egress-ipv4',
  'TCP to public IPv4 addresses',
  V4,
  'Default the box to no network; allow only the destinations a task needs, by address and port.',
);
export const publicEgressIpv6 = egress(
  'public-egress-ipv6',
  'TCP to public IPv6 addresses',
  V6,
  'Apply the same egress policy to IPv6; a v4-only filter leaves v6 open.',
);
