import { CANARY_PREFIX } from '../../lab/canaries.js';
import type { SecurityProbe } from '../../model/probe.js';
import { judgeNetwork } from '../_shared/network.js';

const label = (nonce: string): string => `sc${nonce}`;

export const dnsExfil: SecurityProbe = {
  kind: 'security',
  id: 'dns-exfil',
  title: 'exfiltrate data in a DNS query name',
  category: 'network',
  policyItem: 'network.egress',
  severity: 'high',
  payload: 'dns-exfil',
  remediation: 'With the network off there must be no resolver either; an allowlist must not forward arbitrary names to a recursive resolver.',
  attack: ['T1071.004', 'T1048.003'],
  cwe: ['CWE-284', 'CWE-200'],
  args: (ctx) => ({ label: label(ctx.nonce), canaryPrefix: CANARY_PREFIX }),
  judge: (obs, ctx) => judgeNetwork(obs, ctx, [], { dnsLabels: [label(ctx.nonce), ...ctx.canaries.all.map((c) => c.value.toLowerCase())] }),
};
