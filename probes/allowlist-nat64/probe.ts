import { allowlistProbe } from '../_shared/allowlist.js';

export const allowlistNat64 = allowlistProbe(
  { id: 'allowlist-nat64', severity: 'critical', attack: ['T1552.005'], cwe: ['CWE-184', 'CWE-918'] },
  {
    title: 'allowlist: cloud metadata through its NAT64 forms (and the IPv4-mapped form through proxies)',
    remediation:
      'Deny 169.254.0.0/16 in every form the network translates: 64:ff9b::/96, 64:ff9b:1::/48 and ::ffff:0:0/96; a proxy must normalise an IPv6 literal before checking it.',
  },
);
