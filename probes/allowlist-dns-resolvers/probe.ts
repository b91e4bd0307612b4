import { allowlistProbe } from '../_shared/allowlist.js';

export const allowlistDnsResolvers = allowlistProbe(
  { id: 'allowlist-dns-resolvers', severity: 'high', attack: ['T1071.004', 'T1048.003'], cwe: ['CWE-284', 'CWE-200'] },
  {
    title: 'allowlist: DNS over TCP to the allowed resolver, and DNS to a second resolver, carrying the execution marker',
    remediation: 'Allow the resolver by protocol and port exactly (udp:…:53 does not need tcp), and no other resolver; better, resolve for the box outside it.',
  },
);
