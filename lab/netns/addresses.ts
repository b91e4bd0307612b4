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
  v6('64:ff9b::a9fe:a9fe', 'cloud metadata, NAT64 well-known prefix form'),
  v6('64:ff9b:1::a9fe:a9fe', 'cloud metadata, NAT64 local-use prefix form'),
];

export const LAB_RESOLVER = '192.0.2.53';

/**
 * The lab's fronting proxy: a forward proxy that also routes by Host header and TLS SNI (lab/decoys/front.ts). Its
 * addresses, like the allowlist probes' control host, are not on an interface: the catch-all local route lets a socket
 * bind and answer them, and a proxy that refuses to dial its own host's interface addresses (srt) still dials them.
 */
export const LAB_FRONT = { host: '198.51.100.80', port: 3128 } as const;
/** The source address of the fronting proxy's onward connections: beyond the box's own egress, like a CDN's. */
export const LAB_FRONT_RELAY_SOURCE = '198.51.100.81';
/** The allowlist probes' allowed control host (a wildcard canary answers it), off every interface like the front. */
export const LAB_ALLOWED_HOST = '203.0.113.20';
