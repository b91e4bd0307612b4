import { egress, V4 } from '../_shared/public-egress.js';

export const publicEgressIpv4 = egress(
  'public-egress-ipv4',
  'TCP to public IPv4 addresses',
  V4,
  'Default the box to no network; allow only the destinations a task needs, by address and port.',
);
