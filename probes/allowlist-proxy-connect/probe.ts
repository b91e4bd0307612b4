import { allowlistProbe } from '../_shared/allowlist.js';

export const allowlistProxyConnect = allowlistProbe(
  { id: 'allowlist-proxy-connect', severity: 'high', attack: ['T1090', 'T1041'], cwe: ['CWE-441', 'CWE-284'] },
  {
    title: 'allowlist: CONNECT and absolute-URI requests through an allowed proxy to a denied destination',
    remediation:
      "A proxy the box may reach must apply the same allowlist to every CONNECT target and request URI (by resolved address too); never allow an open forward proxy's address.",
  },
);
