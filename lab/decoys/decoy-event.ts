import { isIPv4, isIPv6 } from 'node:net';
import { MAX_DNS_NAMES, MAX_PAYLOAD_BYTES, type DecoyEvent, type DecoyService, type Endpoint } from './decoy-log.js';

const SUMMARY_MAX_CHARS = 200;

/**
 * Canonical text form of an IP address: IPv4 as is, IPv6 compressed and lower case.
 * Anything else is returned unchanged.
 */
export function canonicalIp(address: string): string {
  if (isIPv4(address)) return address;
  if (!isIPv6(address)) return address;
  try {
    return new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return address;
  }
}

/** The IPv4 form of an IPv4-mapped IPv6 address (`::ffff:1.2.3.4` → `1.2.3.4`), else undefined. */
export function mappedIPv4(address: string): string | undefined {
  if (!isIPv6(address)) return undefined;
  const canonical = canonicalIp(address);
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (hex === null) return undefined;
  const high = Number.parseInt(hex[1] ?? '0', 16);
  const low = Number.parseInt(hex[2] ?? '0', 16);
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/** The address a listener compares against (mapped IPv4 unwrapped, IPv6 canonical). */
export function matchableIp(address: string): string {
  return mappedIPv4(address) ?? canonicalIp(address);
}

export function isWildcardHost(host: string): boolean {
  return host === '0.0.0.0' || (isIPv6(host) && canonicalIp(host) === '::');
}

export function endpoint(address: string | undefined, port: number | undefined): Endpoint {
  return { address: address !== undefined && address !== '' ? address : 'unknown', port: port ?? 0 };
}

/** Base64 of the first MAX_PAYLOAD_BYTES of `payload`. */
export function payloadBase64(payload: Buffer): string {
  return payload.subarray(0, MAX_PAYLOAD_BYTES).toString('base64');
}

/** One printable line: control characters shown as `\xNN`, capped in length. */
export function oneLine(text: string, maxChars = SUMMARY_MAX_CHARS): string {
  const visible = text.replace(/[\x00-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return visible.length > maxChars ? `${visible.slice(0, maxChars - 1)}…` : visible;
}

export interface DecoyEventInput {
  service: DecoyService;
  proto: 'tcp' | 'udp';
  local: Endpoint;
  peer: Endpoint;
  summary: string;
  payload: Buffer;
  /** HTTP request body (capped here). */
  body?: Buffer;
  /** DNS question names (capped here). */
  dnsNames?: readonly string[];
  detail?: Record<string, string>;
}

/**
 * Stamps and caps an event. When an address is IPv4-mapped IPv6 (a dual-stack socket),
 * its IPv4 form is added as `detail.localIPv4` / `detail.peerIPv4`.
 */
export function buildDecoyEvent(input: DecoyEventInput): DecoyEvent {
  const detail: Record<string, string> = { ...input.detail };
  const localV4 = mappedIPv4(input.local.address);
  if (localV4 !== undefined) detail['localIPv4'] = localV4;
  const peerV4 = mappedIPv4(input.peer.address);
  if (peerV4 !== undefined) detail['peerIPv4'] = peerV4;
  if (input.payload.length > MAX_PAYLOAD_BYTES) detail['payloadTruncated'] = 'true';
  if (input.body !== undefined && input.body.length > MAX_PAYLOAD_BYTES) detail['bodyTruncated'] = 'true';
  const event: DecoyEvent = {
    time: new Date().toISOString(),
    service: input.service,
    proto: input.proto,
    local: input.local,
    peer: input.peer,
    summary: oneLine(input.summary),
    payloadBase64: payloadBase64(input.payload),
  };
  if (input.body !== undefined && input.body.length > 0) event.bodyBase64 = payloadBase64(input.body);
  if (input.dnsNames !== undefined && input.dnsNames.length > 0)
    event.dnsNames = input.dnsNames.slice(0, MAX_DNS_NAMES).map((n) => n.replace(/\.$/, '').slice(0, 255));
  if (Object.keys(detail).length > 0) event.detail = detail;
  return event;
}
