import { allowlistProbe } from '../_shared/allowlist.js';

export const allowlistHostSni = allowlistProbe(
  { id: 'allowlist-host-sni', severity: 'high', attack: ['T1090.004'], cwe: ['CWE-441', 'CWE-693'] },
  {
    title: 'allowlist: Host header and TLS SNI naming a denied host on an allowed connection (domain fronting)',
    remediation:
      'Allow no destination that routes by Host or SNI on behalf of its clients (CDN fronts, forward proxies); a proxy that filters by name must connect where the checked name resolves and reject a Host that differs from the URL.',
  },
);
