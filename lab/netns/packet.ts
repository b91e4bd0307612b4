import { isIP } from 'node:net';

export { PacketSchema, type Packet } from '../../model/lab-traffic.js';
import { PacketSchema, type Packet } from '../../model/lab-traffic.js';
export type PacketProto = Packet['proto'];

// `1796063165.990404 lo    In  IP6 2001:db8::10.36728 > 2001:db8::10.443: Flags [S], seq …`
const LINE = /^(\d+\.\d+) (?:(\S+)\s+(In|Out|B|M|P)\s+)?(IP6?) (\S+) > (\S+): (.*)$/;

/** tcpdump `-n` prints `addr.port`; for IPv6 the port follows the last dot, so test what is left is an address. */
function splitEndpoint(text: string, family: 4 | 6): { address: string; port?: number } | undefined {
  if (isIP(text) === family) return { address: text };
  const dot = text.lastIndexOf('.');
  const address = text.slice(0, dot);
  const port = Number(text.slice(dot + 1));
  if (dot <= 0 || isIP(address) !== family || !Number.isInteger(port) || port < 0 || port > 65535) return undefined;
  return { address, port };
}

/** `1796063165.990404` → ms, summed in parts so the microseconds survive float rounding. */
function epochMs(ts: string): number {
  const [sec = '0', frac = ''] = ts.split('.');
  return Number(sec) * 1000 + Number(frac.padEnd(6, '0').slice(0, 6)) / 1000;
}

function protoOf(rest: string, hasPorts: boolean): PacketProto | undefined {
  if (rest.startsWith('Flags [')) return 'tcp';
  if (rest.startsWith('ICMP6')) return 'icmp6';
  if (rest.startsWith('ICMP ')) return 'icmp';
  // The witness filter admits only TCP SYNs, UDP and ICMP, and UDP lines start with whatever tcpdump decoded
  // (`domain …`, `UDP, length 1`, `NTPv4 …`), so a ported non-TCP line is UDP.
  return hasPorts ? 'udp' : undefined;
}

/** One line of `tcpdump -l -n -tt` output, or `undefined` for lines that are not an IP packet summary. */
export function parseTcpdumpLine(line: string): Packet | undefined {
  const m = LINE.exec(line.trimEnd());
  if (m === null) return undefined;
  const [, ts, iface, direction, ipVersion, srcText, dstText, rest] = m;
  if (ts === undefined || srcText === undefined || dstText === undefined || rest === undefined) return undefined;
  const family = ipVersion === 'IP6' ? 6 : 4;
  const src = splitEndpoint(srcText, family);
  const dst = splitEndpoint(dstText, family);
  if (src === undefined || dst === undefined) return undefined;
  const proto = protoOf(rest, src.port !== undefined && dst.port !== undefined);
  if (proto === undefined) return undefined;
  const parsed = PacketSchema.safeParse({
    time: epochMs(ts),
    ...(iface === undefined ? {} : { iface }),
    ...(direction === undefined ? {} : { direction }),
    proto,
    family,
    src: src.address,
    ...(proto === 'tcp' || proto === 'udp' ? { srcPort: src.port, dstPort: dst.port } : {}),
    dst: dst.address,
    raw: line,
  });
  return parsed.success ? parsed.data : undefined;
}
