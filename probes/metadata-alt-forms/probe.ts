import type { SecurityProbe } from '../../model/probe.js';
import { CANARY_PREFIX } from '../../lab/canaries.js';
import { judgeNetwork } from '../_shared/network.js';

export const metadataAltForms: SecurityProbe = {
  kind: 'security',
  id: 'metadata-alt-forms',
  title: 'metadata through other address forms (::ffff:, decimal, hex, octal, DNS name, Alibaba)',
  category: 'network',
  policyItem: 'network.egress',
  severity: 'critical',
  payload: 'metadata-alt-forms',
  // Replies are printed as length, hash and decoy-prefixed values only: a real credential never reaches a report.
  args: () => ({ canaryPrefix: CANARY_PREFIX }),
  remediation: 'Block by destination address after resolution, not by matching the text of a URL; include 100.100.100.200 and metadata.google.internal.',
  attack: ['T1552.005'],
  cwe: ['CWE-918', 'CWE-184'],
  judge: (obs, ctx) =>
    judgeNetwork(
      obs,
      ctx,
      [
        { address: '169.254.169.254', port: 80, proto: 'tcp' },
        { address: '100.100.100.200', port: 80, proto: 'tcp' },
      ],
      { dnsLabels: ['metadata.google.internal'] },
    ),
};
