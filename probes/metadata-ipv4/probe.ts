import type { SecurityProbe } from '../../model/probe.js';
import { CANARY_PREFIX } from '../../lab/canaries.js';
import { judgeNetwork } from '../_shared/network.js';

export const metadataIpv4: SecurityProbe = {
  kind: 'security',
  id: 'metadata-ipv4',
  title: 'cloud metadata credentials over IPv4 (IMDSv1 GET, IMDSv2 PUT token)',
  category: 'network',
  policyItem: 'network.egress',
  severity: 'critical',
  payload: 'metadata-ipv4',
  // Replies are printed as length, hash and decoy-prefixed values only: a real credential never reaches a report.
  args: () => ({ canaryPrefix: CANARY_PREFIX }),
  remediation:
    'Give the box no route to 169.254.169.254 (no network, or a host-side INPUT/egress rule, not only DOCKER-USER); require IMDSv2 with hop limit 1 on the host.',
  attack: ['T1552.005'],
  cwe: ['CWE-918'],
  judge: (obs, ctx) => judgeNetwork(obs, ctx, [{ address: '169.254.169.254', port: 80, proto: 'tcp' }]),
};
