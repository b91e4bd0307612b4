import { BlockList, isIP } from 'node:net';

export type AllowProto = 'tcp' | 'udp' | 'icmp' | 'all';

/** The part of a policy these rules read (model/policy.ts parses its entries with parseAllowEntry). */
export interface NetworkPolicy {
  network: { mode: 'off' | 'allowlist'; allow: readonly string[] };
}

/** One parsed `network.allow` entry. */
export interface AllowRule {
  /** The entry as written in the policy. */
  readonly entry: string;
  /** `all`: a bare address or prefix without protocol or port (every protocol, every port). */
  readonly proto: AllowProto;
  readonly family: 4 | 6;
  /** Network address of the prefix (the address itself for a single host). */
  readonly address: string;
  /** 32 / 128 for a single address. */
  readonly prefix: number;
  /** Absent: every port of the protocol (always absent for icmp and all). */
  readonly port?: number;
}

export const ALLOW_ENTRY_FORMS =
  'tcp:203.0.113.10:80, udp:[2001:db8::10]:53, icmp:203.0.113.10, tcp:198.51.100.0/24:443 ' +
  '(protocol tcp, udp or icmp; IPv6 in brackets when a port follows; an old host:port means tcp)';

/** A target a probe tried: the protocol it used, the address it dialled, the port for tcp/udp. */
export interface NetworkTargetSpec {
  readonly proto: 'tcp' | 'udp' | 'icmp';
  readonly address: string;
  readonly port?: number;
}

/** IPv4-mapped IPv6 (::ffff:a.b.c.d) is the IPv4 address it carries; IPv6 lower case. */
export function canonicalAddress(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return (mapped?.[1] ?? address).toLowerCase();
}

type Parsed = { ok: true; rule: AllowRule } | { ok: false; error: string };

function parsePrefix(text: string): { family: 4 | 6; address: string; prefix: number } | string {
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  const family = isIP(address);
  if (family !== 4 && family !== 6) return `"${address}" is not an IPv4 or IPv6 address`;
  const width = family === 4 ? 32 : 128;
  if (slash < 0) return { family, address: canonicalAddress(address), prefix: width };
  const bitsText = text.slice(slash + 1);
  const bits = Number(bitsText);
  if (!/^\d{1,3}$/.test(bitsText) || bits > width) return `prefix length "/${bitsText}" must be 0..${width}`;
  return { family, address: canonicalAddress(address), prefix: bits };
}

function parsePort(text: string): number | string {
  const port = Number(text);
  return /^\d{1,5}$/.test(text) && port >= 1 && port <= 65535 ? port : `port "${text}" must be 1..65535`;
}

/** `[v6]`, `[v6]:port`, `v4`, `v4:port` (each address may carry a /prefix). */
function splitHostPort(text: string): { host: string; port?: string } | undefined {
  const bracketed = /^\[([^\]]+)\](?::([^:]*))?$/.exec(text);
  if (bracketed) return { host: bracketed[1] ?? '', ...(bracketed[2] !== undefined ? { port: bracketed[2] } : {}) };
  if (text.includes('[') || text.includes(']')) return undefined;
  const parts = text.split(':');
  if (parts.length === 1) return { host: text };
  if (parts.length === 2) return { host: parts[0] ?? '', port: parts[1] ?? '' };
  return undefined; // an unbracketed IPv6 address, which is ambiguous next to a port
}

/** Parses one `network.allow` entry; the error names what a valid entry looks like. */
export function parseAllowEntry(entry: string): Parsed {
  const fail = (why: string): Parsed => ({ ok: false, error: `${why}; expected an entry such as ${ALLOW_ENTRY_FORMS}` });
  const protoMatch = /^(tcp|udp|icmp):(.+)$/.exec(entry);
  const proto = protoMatch?.[1] as 'tcp' | 'udp' | 'icmp' | undefined;
  const rest = protoMatch?.[2] ?? entry;
  // A bare address or prefix (no protocol, no port; IPv6 may stay unbracketed) allows everything to it.
  if (proto === undefined || proto === 'icmp') {
    const bare = parsePrefix(rest.replace(/^\[(.+)\]$/, '$1'));
    if (typeof bare !== 'string') return { ok: true, rule: { entry, proto: proto ?? 'all', ...bare } };
    if (proto === 'icmp') return fail(`icmp entries take an address or prefix without a port (${bare})`);
  }
  const hp = splitHostPort(rest);
  if (hp === undefined) return fail(`cannot read "${entry}" (write IPv6 in brackets: tcp:[2001:db8::10]:443)`);
  const net = parsePrefix(hp.host);
  if (typeof net === 'string') return fail(net);
  if (hp.port === undefined) return { ok: true, rule: { entry, proto: proto ?? 'tcp', ...net } };
  const port = parsePort(hp.port);
  if (typeof port === 'string') return fail(port);
  return { ok: true, rule: { entry, proto: proto ?? 'tcp', ...net, port } };
}

/** Every rule of the policy (entries are validated by the policy schema, so none fails here). */
export function allowRules(policy: NetworkPolicy): AllowRule[] {
  if (policy.network.mode === 'off') return [];
  return policy.network.allow.flatMap((entry) => {
    const parsed = parseAllowEntry(entry);
    return parsed.ok ? [parsed.rule] : [];
  });
}

function ruleCovers(rule: AllowRule, address: string, family: 4 | 6): boolean {
  const list = new BlockList();
  const type = rule.family === 4 ? 'ipv4' : 'ipv6';
  if (rule.prefix === (rule.family === 4 ? 32 : 128)) list.addAddress(rule.address, type);
  else list.addSubnet(rule.address, rule.prefix, type);
  // BlockList matches an IPv4-mapped IPv6 address against IPv4 rules itself.
  return list.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** Whether one rule lets the box reach `target`: same protocol (or `all`), address in the prefix, same port when the rule names one. */
export function ruleAllows(rule: AllowRule, target: NetworkTargetSpec): boolean {
  if (rule.proto !== 'all' && rule.proto !== target.proto) return false;
  if (rule.port !== undefined && target.port !== rule.port) return false;
  const address = canonicalAddress(target.address);
  const family = isIP(address);
  if (family !== 4 && family !== 6) return false;
  return ruleCovers(rule, address, family);
}

/** Whether the policy lets the box reach `target` (an ICMP echo needs an icmp or bare entry, whatever tcp ports are open). */
export function isAllowed(policy: NetworkPolicy, target: NetworkTargetSpec): boolean {
  return allowRules(policy).some((rule) => ruleAllows(rule, target));
}
