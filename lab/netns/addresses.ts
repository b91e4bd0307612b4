export interface DecoyAddress {
  readonly family: 4 | 6;
  /** Address without prefix length, as `ip -j addr` reports it. */
  readonly address: string;
  readonly cidr: string;
  readonly role: string;
}

function v4(address: string, role: string): DecoyAddress {
  return { family: 4, address, cidr: `${address}/32`, role };
}

function v6(address: string, role: string): DecoyAddress {
  return { family: 6, address, cidr: `${address}/128`, role };
}

/** Addresses an attacker would try, placed on the lab namespace's `lo` (this kernel has no `dummy` links). */
export const DECOY_ADDRESSES: readonly DecoyAddress[] = [
  v4('169.254.169.254', 'cloud metadata (AWS, GCP, Azure)'),
  v4('100.100.100.200', 'cloud metadata (Alibaba)'),
  v4('192.0.2.53', 'lab resolver'),
  v4('203.0.113.10', 'canary host'),
  v4('198.51.100.10', 'canary host'),
  v6('fd00:ec2::254', 'cloud metadata (AWS IPv6)'),
  v6('2001:db8::10', 'canary host (IPv6)'),
];

export const LAB_RESOLVER = '192.0.2.53';
