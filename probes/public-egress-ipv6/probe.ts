import { egress, V6 } from '../_shared/public-egress.js';

export const publicEgressIpv6 = egress(
  'public-egress-ipv6',
  'TCP to public IPv6 addresses',
  V6,
  'Apply the same egress policy to IPv6; a v4-only filter leaves v6 open.',
);
