import { allowlistProbe } from '../_shared/allowlist.js';

export const allowlistRebinding = allowlistProbe(
  { id: 'allowlist-rebinding', severity: 'critical', attack: ['T1552.005', 'T1090'], cwe: ['CWE-918', 'CWE-367'] },
  {
    title: 'allowlist: an allowed name rebound to cloud metadata or loopback, connected by name',
    remediation:
      'Check the address a name resolved to, after resolution and at connect time (refuse link-local, loopback and private answers for an allowed name); pin the answer between the check and the connection.',
  },
);
