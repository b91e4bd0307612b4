import { isIP } from 'node:net';
import type { Policy } from './model/policy.js';

/** IPv4-mapped IPv6 (::ffff:a.b.c.d) is the IPv4 address it carries. */
export function canonicalAddress(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return (mapped?.[1] ?? address).toLowerCase();
}

function ipToBigInt(ip: string): bigint {
  if (isIP(ip) === 4) return ip.split('.').reduce((acc, o) => (acc << 8n) + BigInt(Number(o)), 0n);
  const [head = '', tail = ''] = ip.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h;
  return groups.reduce((acc, g) => (acc << 16n) + BigInt(parseInt(g || '0', 16)), 0n);
}

function inCidr(address: string, cidr: string): boolean {
  const [net = '', bitsText = ''] = cidr.split('/');
  const v = isIP(address);
  if (v === 0 || v !== isIP(net)) return false;
  const width = v === 4 ? 32 : 128;
  const bits = Number(bitsText);
  if (!Number.isInteger(bits) || bits < 0 || bits > width) return false;
  const mask = bits === 0 ? 0n : ((1n << BigInt(bits)) - 1n) << BigInt(width - bits);
  return (ipToBigInt(address) & mask) === (ipToBigInt(net) & mask);
}

/** host:port, [v6]:port, a bare address, or a CIDR. */
function matches(entry: string, address: string, port: number | undefined): boolean {
  if (entry.includes('/')) return inCidr(address, entry);
  const bracketed = /^\[(.+)\]:(\d+)$/.exec(entry);
  const hostPort = bracketed ?? /^([^:]+):(\d+)$/.exec(entry);
  if (hostPort) return canonicalAddress(hostPort[1] ?? '') === address && (port === undefined || Number(hostPort[2]) === port);
  return canonicalAddress(entry) === address;
}

/** Whether the policy lets the box reach address:port. */
export function isAllowed(policy: Policy, address: string, port?: number): boolean {
  if (policy.network.mode === 'off') return false;
  const a = canonicalAddress(address);
  return policy.network.allow.some((entry) => matches(entry, a, port));
}
