import type { SecurityProbe } from '../../model/probe.js';
import { CANARY_PREFIX } from '../../lab/canaries.js';
import { judgeNetwork } from '../_shared/network.js';

export const metadataIpv6: SecurityProbe = {
  kind: 'security',
  id: 'metadata-ipv6',
  title: 'cloud metadata over IPv6 (fd00:ec2::254)',
  category: 'network',
  policyItem: 'network.egress',
  severity: 'critical',
  payload: 'metadata-ipv6',
  // Replies are printed as length, hash and decoy-prefixed values only: a real credential never reaches a report.
  args: () => ({ canaryPrefix: CANARY_PREFIX }),
  remediation: 'Filter IPv6 as well as IPv4: a rule set that only blocks 169.254.169.254 leaves fd00:ec2::254 open.',
  attack: ['T1552.005'],
  cwe: ['CWE-918'],
  judge: (obs, ctx) => judgeNetwork(obs, ctx, [{ address: 'fd00:ec2::254', port: 80, proto: 'tcp' }]),
};
