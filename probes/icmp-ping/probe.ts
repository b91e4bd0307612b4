import type { SecurityProbe } from '../../model/probe.js';
import { judgeNetwork } from '../_shared/network.js';

export const icmpPing: SecurityProbe = {
  kind: 'security',
  id: 'icmp-ping',
  title: 'ICMP echo to a public address',
  category: 'network',
  policyItem: 'network.egress',
  severity: 'medium',
  payload: 'icmp-ping',
  remediation: 'Drop ICMP egress too: it is a covert channel and a reachability oracle.',
  attack: ['T1095', 'T1018'],
  cwe: ['CWE-284'],
  args: () => ({ address: '203.0.113.10' }),
  judge: (obs, ctx) => judgeNetwork(obs, ctx, [{ address: '203.0.113.10', proto: 'icmp' }]),
};
