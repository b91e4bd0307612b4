import { startCapture, type Capture } from './capture.js';
import type { NetnsRef } from './enter.js';
import type { Packet } from './packet.js';

/**
 * Initial TCP SYNs (not SYN-ACKs), all UDP and ICMP. `tcp[]` offsets only apply to IPv4, so IPv6 SYNs need
 * their own clause: byte 13 of a TCP header right after the 40-byte IPv6 header (no extension headers).
 */
export const WITNESS_FILTER = '(tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn) or (ip6 and tcp and ip6[13+40] & 0x12 == 0x02) or udp or icmp or icmp6';

export interface WitnessOptions {
  readonly onPacket?: (packet: Packet) => void;
  readonly maxPackets?: number;
  readonly keep?: 'first' | 'latest';
  readonly readyTimeoutMs?: number;
  readonly stopGraceMs?: number;
}

export type PacketWitness = Capture;

/** Records every connection attempt inside the lab; resolves once tcpdump is listening. */
export function startPacketWitness(ns: NetnsRef, options: WitnessOptions = {}): Promise<PacketWitness> {
  return startCapture({ ...options, filter: WITNESS_FILTER, netns: ns });
}

/** pcap filter matching any packet to or from one of `addresses`. */
export function addressFilter(addresses: readonly string[]): string {
  if (addresses.length === 0) throw new TypeError('Expected at least one address to watch');
  return addresses.map((a) => `host ${a}`).join(' or ');
}
